#!/usr/bin/env python3
"""Checks that docs/reference/ has an entry for every function, view and
setting that CREATE EXTENSION dlock creates.

Usage: check-doc-reference.py [ROOT]

Runs psql against the server that libpq's PG* variables name (as
scripts/test.sh sets them after start_cluster), as a role that may create
databases: it creates a scratch database, creates dlock there, and lists
  - every function that belongs to the extension (pg_depend, deptype 'e'),
    internal ones included: an internal function gets a short entry that
    says so (fence_guard, replace_function, lease_stats);
  - every view that belongs to the extension;
  - every setting named dlock.* in pg_settings, once a dlock call has
    loaded the library.
Then drops the database. An entry is a "## " heading of a page of
docs/reference/ that names the object in backquotes (`dlock.renew`), and a
row of the page's summary table that links to it and ends with the version
that added it: functions on any page but views.md, settings.md and
errors.md; views on views.md; settings on settings.md. Prints each missing
entry and exits 1 if there is one. Standard library only.
"""
import glob
import os
import re
import subprocess
import sys

NOT_FUNCTION_PAGES = ('views.md', 'settings.md', 'errors.md')


def psql(database, sql):
    out = subprocess.run(['psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
                          '-d', database, '-c', sql],
                         check=True, capture_output=True, text=True).stdout
    return [line for line in out.split('\n') if line]


def extension_objects():
    scratch = 'dlock_doc_check_%d' % os.getpid()
    psql('postgres', 'CREATE DATABASE %s' % scratch)
    try:
        psql(scratch, 'CREATE EXTENSION dlock')
        member = """EXISTS (SELECT FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
                              WHERE d.classid = '{cls}'::regclass AND d.objid = {obj}.oid
                                AND d.refclassid = 'pg_extension'::regclass
                                AND d.deptype = 'e' AND e.extname = 'dlock')"""
        functions = psql(scratch, """
            SELECT DISTINCT p.proname FROM pg_proc p
             WHERE p.pronamespace = 'dlock'::regnamespace AND %s ORDER BY 1"""
                         % member.format(cls='pg_proc', obj='p'))
        views = psql(scratch, """
            SELECT c.relname FROM pg_class c
             WHERE c.relnamespace = 'dlock'::regnamespace AND c.relkind IN ('v', 'm')
               AND %s ORDER BY 1""" % member.format(cls='pg_class', obj='c'))
        # The first dlock call loads the library, which defines the settings.
        settings = psql(scratch, """
            SELECT dlock.stats_status() IS NULL;
            SELECT name FROM pg_settings WHERE name LIKE 'dlock.%' ORDER BY 1""")[1:]
    finally:
        psql('postgres', 'DROP DATABASE IF EXISTS %s' % scratch)
    return functions, views, [s[len('dlock.'):] for s in settings]


def documented(root):
    """{page file name: (names in '## ' headings, names in summary rows)}."""
    pages = {}
    for path in sorted(glob.glob(os.path.join(root, 'docs', 'reference', '*.md'))):
        headings, rows = set(), set()
        fence = False
        with open(path, encoding='utf-8') as f:
            for line in f:
                if line.startswith('```'):
                    fence = not fence
                if fence:
                    continue
                if line.startswith('## '):
                    headings.update(re.findall(r'`dlock\.(\w+)`', line))
                m = re.match(r'^\| \[`dlock\.(\w+)`\]\(#[^)]+\) \|.*\| \d+\.\d+\.\d+ \|$', line.rstrip('\n'))
                if m:
                    rows.add(m.group(1))
        pages[os.path.basename(path)] = (headings, rows)
    return pages


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    functions, views, settings = extension_objects()
    pages = documented(root)
    missing = []

    def check(kind, names, allowed):
        for name in names:
            where = [p for p in pages if allowed(p) and name in pages[p][0]]
            if not where:
                missing.append('%s dlock.%s: no "## `dlock.%s`" entry in docs/reference/' % (kind, name, name))
            elif not any(name in pages[p][1] for p in where):
                missing.append('%s dlock.%s: no row in the summary table of %s (link, ..., added in)'
                               % (kind, name, ' or '.join(where)))

    check('function', functions, lambda p: p not in NOT_FUNCTION_PAGES)
    check('view', views, lambda p: p == 'views.md')
    check('setting', settings, lambda p: p == 'settings.md')
    for m in missing:
        print(m, file=sys.stderr)
    if not (functions and views and settings):
        print('check-doc-reference: found no functions, views or settings to check', file=sys.stderr)
        return 1
    print('check-doc-reference: %d functions, %d views, %d settings, %d undocumented'
          % (len(functions), len(views), len(settings), len(missing)))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
