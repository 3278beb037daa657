#!/usr/bin/env bash
# The packages, built and installed for real: from a copy of the tracked
# tree (so nothing the working tree has built gets in), `make dist` makes the
# PGXN zip and `dpkg-buildpackage` the Debian packages; apt installs those
# into the system's PostgreSQL 15, a throwaway cluster creates the extension
# and takes a lease, the dlock command and a program built against
# libdlock-client-dev talk to it; then the packages are purged, and the
# files they replaced (a `make install`, a `cmake --install`) are put back
# byte for byte. Also checks that a version differing from dlock.control's
# in META.json or debian/changelog stops `make dist` and the package build.
# Usage: bash test/packaging/run.sh   (as root, or as a user with sudo)
# It installs into the system's PostgreSQL: run it alone, never beside
# another suite that uses that installation.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

if [ "$PG_BIN" != /usr/lib/postgresql/15/bin ]; then
  log "the packages install into /usr/lib/postgresql/15: unset PG_BIN"
  exit 2
fi
PACKAGES="postgresql-15-dlock dlock libdlock-client-dev"
# Is package $1 installed, or removed with its configuration files kept?
present() {
  dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -Eq ' (installed|config-files)$'
}
for p in $PACKAGES; do
  if present "$p"; then
    log "$p is installed already; this test would purge it: purge it first"
    exit 2
  fi
done
# The package build's own needs (debian/control's Build-Depends beyond the
# project's), and python3 for the META.json check.
ensure_packages debhelper postgresql-server-dev-all python3

fail() {
  log "FAIL: $*"
  exit 1
}

WORK=$(mktemp -d /tmp/dlock-packaging.XXXXXX)
chmod 755 "$WORK"
INSTALLED=
cleanup() {
  stop_cluster
  if [ -n "$INSTALLED" ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $PACKAGES >/dev/null 2>&1 || true
    [ -s "$WORK/replaced.tar" ] && as_root tar -C / -xpf "$WORK/replaced.tar"
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# ------------------------------------------------------------ the tree
log "copying the tracked tree to $WORK/dlock"
SRC=$WORK/dlock
mkdir "$SRC"
git -C "$DLOCK_ROOT" ls-files -z |
  (cd "$DLOCK_ROOT" && tar --null -T - --ignore-failed-read -cf - 2>/dev/null) |
  tar -C "$SRC" -xf -
# make dist archives a commit: the copy gets one of its own.
git -C "$SRC" init -q
git -C "$SRC" add -A
git -C "$SRC" -c user.name=dlock -c user.email=dlock@localhost commit -q -m tree
VERSION=$(make -C "$SRC" -s --no-print-directory print-version)
[ -n "$VERSION" ] || fail "dlock.control names no default_version"
log "dlock.control says $VERSION"

# ------------------------------------------------------------ PGXN
log "make dist"
make -C "$SRC" -s dist >/dev/null || fail "make dist"
ZIP=$SRC/dlock-$VERSION.zip
[ -f "$ZIP" ] || fail "make dist wrote no dlock-$VERSION.zip"
git -C "$SRC" ls-files >"$WORK/tracked"
python3 - "$ZIP" "dlock-$VERSION" "$WORK/tracked" <<'EOF' || fail "the zip's layout"
import sys, zipfile
zip_path, top, tracked_path = sys.argv[1:]
names = zipfile.ZipFile(zip_path).namelist()
files = sorted(n[len(top) + 1:] for n in names if not n.endswith("/"))
outside = [n for n in names if n != top + "/" and not n.startswith(top + "/")]
tracked = sorted(open(tracked_path).read().split("\n")[:-1])
if outside:
    sys.exit(f"entries outside {top}/: {outside[:5]}")
if files != tracked:
    extra, missing = set(files) - set(tracked), set(tracked) - set(files)
    sys.exit(f"not the tracked files: extra {sorted(extra)[:5]}, missing {sorted(missing)[:5]}")
print(f"{zip_path}: {len(files)} files, all under {top}/")
EOF
mkdir "$WORK/unzipped"
python3 -m zipfile -e "$ZIP" "$WORK/unzipped"
UNZIPPED=$WORK/unzipped/dlock-$VERSION
python3 "$SRC/scripts/check-meta.py" "$UNZIPPED/META.json" "$VERSION" "$UNZIPPED" ||
  fail "the zip's META.json"
[ "$(make -C "$UNZIPPED" -s --no-print-directory print-version)" = "$VERSION" ] ||
  fail "the zip's dlock.control does not say $VERSION"

# A META.json version that differs from dlock.control's stops make dist.
sed -i "s/\"version\": \"$VERSION\"/\"version\": \"0.0.1\"/" "$SRC/META.json"
git -C "$SRC" -c user.name=dlock -c user.email=dlock@localhost commit -q -am drift
rm -f "$ZIP"
if make -C "$SRC" -s dist >"$WORK/drift.out" 2>&1; then
  fail "make dist accepted META.json at 0.0.1"
fi
grep -q "version: '0.0.1', but dlock.control says '$VERSION'" "$WORK/drift.out" ||
  fail "make dist's complaint: $(cat "$WORK/drift.out")"
[ ! -e "$ZIP" ] || fail "make dist left a zip behind after a failed check"
git -C "$SRC" reset -q --hard HEAD~1

# ------------------------------------------------------------ Debian
# A changelog version that differs from dlock.control's stops the build.
cp "$SRC/debian/changelog" "$WORK/changelog"
sed -i "1s/(.*)/(0.0.1)/" "$SRC/debian/changelog"
if (cd "$SRC" && ./debian/rules clean) >"$WORK/drift.out" 2>&1; then
  fail "debian/rules accepted debian/changelog at 0.0.1"
fi
grep -q "debian/changelog's version is 0.0.1 but dlock.control's default_version is $VERSION" \
  "$WORK/drift.out" || fail "debian/rules' complaint: $(cat "$WORK/drift.out")"
cp "$WORK/changelog" "$SRC/debian/changelog"

log "dpkg-buildpackage -us -uc -b"
(cd "$SRC" && dpkg-buildpackage -us -uc -b -j2) >"$WORK/build.log" 2>&1 || {
  tail -n 40 "$WORK/build.log"
  fail "dpkg-buildpackage"
}
for p in $PACKAGES; do
  [ -f "$WORK/${p}_${VERSION}_$(dpkg --print-architecture).deb" ] || fail "no $p $VERSION package"
done
# No test program, GoogleTest or demo got built.
if grep -Eq 'dlock_[a-z_]*tests|dlock_(demo|soak|pooler_stress)|gtest' "$WORK/build.log"; then
  fail "the package build built tests or the demo"
fi

# The files the packages will replace (a make install, say), kept to be put
# back after the purge.
for p in $PACKAGES; do
  dpkg-deb --fsys-tarfile "$WORK/${p}_${VERSION}"_*.deb | tar -t | sed -n 's|^\./|/|p'
done | while read -r path; do
  [ -f "$path" ] && ! dpkg -S "$path" >/dev/null 2>&1 && printf '%s\n' "${path#/}"
done >"$WORK/replaced.list" || true
if [ -s "$WORK/replaced.list" ]; then
  tar -C / -cpf "$WORK/replaced.tar" -T "$WORK/replaced.list"
  (cd / && tr '\n' '\0' <"$WORK/replaced.list" | xargs -0 sha256sum) >"$WORK/replaced.sha256"
  log "the packages replace $(wc -l <"$WORK/replaced.list") files; they are put back afterwards"
fi

log "apt-get install ./postgresql-15-dlock_*.deb ./dlock_*.deb ./libdlock-client-dev_*.deb"
INSTALLED=1
(cd "$WORK" && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  ./postgresql-15-dlock_"$VERSION"_*.deb ./dlock_"$VERSION"_*.deb \
  ./libdlock-client-dev_"$VERSION"_*.deb) >"$WORK/apt.log" 2>&1 || {
  cat "$WORK/apt.log"
  fail "apt-get install"
}

for p in $PACKAGES; do
  present "$p" || fail "apt-get did not install $p"
done
owned_by() {  # owned_by PACKAGE PATH
  dpkg -L "$1" | grep -qx "$2" || fail "$2 is not in $1's files"
  [ -f "$2" ] || fail "$2 is missing"
}
EXT=/usr/share/postgresql/15/extension
owned_by postgresql-15-dlock /usr/lib/postgresql/15/lib/dlock.so
owned_by postgresql-15-dlock "$EXT/dlock.control"
for script in "$SRC"/extension/dlock--*.sql; do
  owned_by postgresql-15-dlock "$EXT/$(basename "$script")"
  cmp -s "$script" "$EXT/$(basename "$script")" || fail "$(basename "$script") differs from the tree's"
done
owned_by dlock /usr/bin/dlock
owned_by dlock /usr/share/man/man1/dlock.1.gz
owned_by dlock /usr/share/doc/dlock/examples/dlock-queries.yaml
cmp -s "$SRC/monitoring/dlock-queries.yaml" /usr/share/doc/dlock/examples/dlock-queries.yaml ||
  fail "the packaged dlock-queries.yaml differs from the tree's"
owned_by libdlock-client-dev /usr/lib/libdlock_client.a
owned_by libdlock-client-dev /usr/include/dlock/lease.h
owned_by libdlock-client-dev /usr/lib/cmake/dlock_client/dlock_clientConfig.cmake
# The library the server loads is the package's, byte for byte.
dpkg-deb -x "$WORK/postgresql-15-dlock_${VERSION}"_*.deb "$WORK/deb"
cmp -s "$WORK/deb/usr/lib/postgresql/15/lib/dlock.so" /usr/lib/postgresql/15/lib/dlock.so ||
  fail "the installed dlock.so is not the package's"

# ------------------------------------------------------------ using them
start_cluster
trap cleanup EXIT  # start_cluster set its own
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION dlock' || fail "CREATE EXTENSION dlock"
got=$(psql -X -At -c "SELECT extversion FROM pg_extension WHERE extname = 'dlock'")
[ "$got" = "$VERSION" ] || fail "extension version $got, not $VERSION"
got=$(psql -X -At -c "SELECT token FROM dlock.try_acquire('packaged', interval '10 min', owner => 'packaging-test')")
[ "$got" = 1 ] || fail "the first lease's token is '$got', not 1"

got=$(/usr/bin/dlock --version)
[ "$got" = "dlock $VERSION" ] || fail "dlock --version says '$got', not 'dlock $VERSION'"
/usr/bin/dlock status packaged >"$WORK/status.out" || fail "dlock status exited $?"
cat "$WORK/status.out"
[ "$(wc -l <"$WORK/status.out")" = 2 ] || fail "dlock status printed other than a header and one row"
tail -n 1 "$WORK/status.out" | grep -Eq '^packaged +held +packaging-test +1 ' ||
  fail "dlock status does not show packaged held by packaging-test with token 1"

log "building test/consumer against libdlock-client-dev"
cmake -S "$SRC/test/consumer" -B "$WORK/consumer" \
  -Ddlock_client_DIR=/usr/lib/cmake/dlock_client >/dev/null || fail "configuring test/consumer"
cmake --build "$WORK/consumer" >/dev/null || fail "building test/consumer"
grep -q '/usr/lib/libdlock_client.a' "$WORK/consumer/CMakeFiles/consumer.dir/link.txt" ||
  fail "test/consumer was not linked with the package's library"
"$WORK/consumer/consumer" || fail "test/consumer against the cluster"

# ------------------------------------------------------------ purge
stop_cluster
log "apt-get purge $PACKAGES"
as_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $PACKAGES >/dev/null ||
  fail "apt-get purge"
INSTALLED=
for p in $PACKAGES; do
  present "$p" && fail "$p is still installed"
done
[ ! -e /usr/bin/dlock ] || fail "/usr/bin/dlock outlived the purge"
if [ -s "$WORK/replaced.list" ]; then
  as_root tar -C / -xpf "$WORK/replaced.tar"
  (cd / && sha256sum --quiet -c "$WORK/replaced.sha256") || fail "the replaced files did not come back"
  log "put back the $(wc -l <"$WORK/replaced.list") files the packages had replaced"
fi
echo "packaging: PGXN zip and Debian packages of dlock $VERSION checked"
