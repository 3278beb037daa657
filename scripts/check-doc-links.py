#!/usr/bin/env python3
"""Checks that every relative link in the tree's Markdown files resolves.

Usage: check-doc-links.py [ROOT]     check every *.md file git knows of
                                     (tracked, or new and not ignored)
       check-doc-links.py --self-test

A link is [text](target) outside code. A target with a scheme (https:,
mailto:) is not checked. Any other target must name a file or directory
relative to the linking file; a #anchor must name a heading of the target
page (or of the linking page, for a bare #anchor), by GitHub's rules:
markup dropped, lowercase, every character other than a letter, a digit,
a space, '-' or '_' dropped, spaces to '-', and the second heading with
the same slug gets '-1', the third '-2'. Prints each broken link as
FILE:LINE: TARGET: why, and exits 1 if there is one. Standard library only.
"""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r'^ {0,3}(```|~~~)')
HEADING = re.compile(r'^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$')
LINK = re.compile(r'(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
HTML_ANCHOR = re.compile(r'<a\s+(?:name|id)="([^"]+)"', re.I)


def prose(text):
    """The text with fenced code blocks blanked (line numbers kept)."""
    out, fence = [], None
    for line in text.split('\n'):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1) == fence:
                fence = None
            out.append('')
        elif m:
            fence = m.group(1)
            out.append('')
        else:
            out.append(line)
    return '\n'.join(out)


def slug(heading):
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', heading)  # links: their text
    text = re.sub(r'<[^>]+>', '', text)  # inline HTML
    text = text.replace('`', '').replace('*', '')
    text = re.sub(r'(?<!\w)_+|_+(?!\w)', '', text)  # _emphasis_, not snake_case
    text = text.strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def anchors(text):
    seen, result = {}, set()
    for line in prose(text).split('\n'):
        for name in HTML_ANCHOR.findall(line):
            result.add(name)
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else '%s-%d' % (base, n))
    return result


def in_code_span(text, pos):
    """Whether pos lies inside an inline `code` span of its paragraph."""
    start = text.rfind('\n\n', 0, pos)
    return text.count('`', start + 1, pos) % 2 == 1


def markdown_files(root):
    try:
        out = subprocess.run(
            ['git', '-C', root, 'ls-files', '--cached', '--others', '--exclude-standard',
             '-z', '--', '*.md'],
            check=True, capture_output=True, text=True).stdout
        files = [f for f in out.split('\0') if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith('.')]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names if n.endswith('.md')]
    return sorted(set(f for f in files if os.path.isfile(os.path.join(root, f))))


def check(root):
    root = os.path.abspath(root)
    cache = {}

    def page_anchors(path):
        if path not in cache:
            with open(path, encoding='utf-8') as f:
                cache[path] = anchors(f.read())
        return cache[path]

    problems = []
    for rel in markdown_files(root):
        path = os.path.join(root, rel)
        with open(path, encoding='utf-8') as f:
            text = prose(f.read())
        for m in LINK.finditer(text):
            if in_code_span(text, m.start()):
                continue
            target = m.group(3)
            if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target):
                continue  # https:, mailto: and the like
            line = text.count('\n', 0, m.start()) + 1
            file_part, _, anchor = target.partition('#')
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = '%s:%d: %s' % (rel, line, target)
            if not os.path.exists(dest):
                problems.append('%s: no such file' % where)
            elif anchor:
                if os.path.isdir(dest) or not dest.endswith('.md'):
                    problems.append('%s: an anchor into a file that is not Markdown' % where)
                elif anchor not in page_anchors(dest):
                    problems.append('%s: no heading with that anchor in %s'
                                    % (where, os.path.relpath(dest, root)))
    return problems


def self_test():
    pages = {
        'README.md': '# Top\n\n[a](docs/a.md#the-dlockkey-function) [b](docs/) '
                     '[c](#top) [d](https://example.org/x#y)\n\n```\n[e](nowhere.md)\n```\n'
                     '`[f](nowhere.md)` [g](docs/a.md#same-1)\n',
        'docs/a.md': '# Top\n\n## The `dlock.key` function\n\n## Same\n\n## Same\n\n'
                     '[back](../README.md#top) [multi\nline](../README.md)\n',
    }
    broken = {
        'a missing file': ('docs/a.md', '[x](missing.md)'),
        'a missing anchor': ('docs/a.md', '[x](#no-such-heading)'),
        'an anchor past the duplicates': ('README.md', '[x](docs/a.md#same-2)'),
    }
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        def write(extra=None):
            for rel, body in pages.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                if extra and extra[0] == rel:
                    body += '\n' + extra[1] + '\n'
                with open(os.path.join(tmp, rel), 'w', encoding='utf-8') as f:
                    f.write(body)
        write()
        got = check(tmp)
        if got:
            failures.append('the good pages fail: %s' % got)
        for what, extra in broken.items():
            write(extra)
            if len(check(tmp)) != 1:
                failures.append('%s is not reported' % what)
    for f in failures:
        print('check-doc-links self-test: ' + f, file=sys.stderr)
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ['--self-test']:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    problems = check(root)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print('check-doc-links: %d broken link(s)' % len(problems), file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
