#!/usr/bin/env bash
# Builds a PostgreSQL server of another major from Debian's source package,
# for porting and testing dlock there: the upstream tree inside the package
# (not Debian's packaging), with cassert, debug symbols and TAP tests, and
# the pieces PGXS's installcheck needs (pg_regress, isolationtester,
# pg_isolation_regress, the Perl TAP modules). Debian 12 has no package of
# those majors, so the sources come from sid through a deb-src entry of its
# own (sources only: no binary from sid is ever installed). The result is
# cached by exact version under $DLOCK_PG_CACHE (/var/cache/dlock), outside
# the clone; a second run reuses it. Prints the pg_config path last.
# Usage: bash scripts/build-postgres.sh 18   (as root, or with sudo)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# = 1 ] && [[ $1 =~ ^[0-9]+$ ]] || {
  echo "usage: bash scripts/build-postgres.sh MAJOR" >&2
  exit 2
}
major=$1
cache=${DLOCK_PG_CACHE:-/var/cache/dlock}

ensure_sid_sources
version=$(source_version "postgresql-$major")
[ -n "$version" ] || {
  log "no source package postgresql-$major is served"
  exit 1
}
prefix=$cache/postgresql-$version
if [ -x "$prefix/bin/pg_config" ] && [ -f "$prefix/.complete" ]; then
  log "PostgreSQL $version is built already, in $prefix"
  echo "$prefix/bin/pg_config"
  exit 0
fi

# What configure and the build need, from Debian 12.
missing=$(missing_packages dpkg-dev gcc make bison flex libreadline-dev \
  zlib1g-dev pkg-config libipc-run-perl)
[ -z "$missing" ] || install_packages $missing

scratch=$(mktemp -d /tmp/dlock-pgsrc.XXXXXX)
chmod 755 "$scratch"  # apt fetches as _apt
trap 'rm -rf "$scratch"' EXIT
start=$SECONDS
log "fetching the source of postgresql-$major $version into $scratch"
(cd "$scratch" && apt-get source -qq --download-only "postgresql-$major" >/dev/null)
tarball=$(ls "$scratch"/postgresql-"$major"_*.orig.tar.* | head -n 1)
tar -xf "$tarball" -C "$scratch"
src=$(find "$scratch" -mindepth 1 -maxdepth 1 -type d -name 'postgresql-*' | head -n 1)
fetched=$SECONDS

log "configuring $src for $prefix"
(cd "$src" && nice ./configure --prefix="$prefix" --enable-tap-tests \
  --enable-cassert --enable-debug --without-icu >"$scratch/configure.log" 2>&1) || {
  tail -n 30 "$scratch/configure.log" >&2
  exit 1
}
configured=$SECONDS
log "building"
nice make -C "$src" -s -j2 >"$scratch/build.log" 2>&1 || {
  tail -n 30 "$scratch/build.log" >&2
  exit 1
}
built=$SECONDS
log "installing into $prefix"
# PGXS's installcheck runs pg_regress and, with ISOLATION, isolationtester and
# pg_isolation_regress; TAP tests (prove_installcheck) need the Perl modules.
{
  make -C "$src" -s install &&
    make -C "$src/src/test/regress" -s install &&
    make -C "$src/src/test/isolation" -s install &&
    make -C "$src/src/test/perl" -s install &&
    make -C "$src/contrib/dblink" -s install &&  # the isolation specs
    make -C "$src/contrib/amcheck" -s install    # sql/lease_rows.sql
} >"$scratch/install.log" 2>&1 || {
  tail -n 30 "$scratch/install.log" >&2
  exit 1
}
touch "$prefix/.complete"
log "PostgreSQL $version: fetch $((fetched - start)) s, configure $((configured - fetched)) s," \
  "build $((built - configured)) s, install $((SECONDS - built)) s"
echo "$prefix/bin/pg_config"
