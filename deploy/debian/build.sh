#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Build the Debian package of ttftrace (`make deb`): `make install PREFIX=/usr`
# into a staging root, then dpkg-deb. Depends is computed from the shared
# libraries the binaries link (dpkg-shlibdeps), so that `apt install
# ./ttftrace_*.deb` pulls the run-time libraries; the version comes from git
# describe (docs/deploy.md "Debian package").
# Usage: deploy/debian/build.sh OUTDIR   (run by `make deb`: MAINTAINER from it;
# VERSION, when set, instead of git's; MAKE, the make to run)
set -euo pipefail
cd "$(dirname "$0")/../.."

err() { echo "Error: $1" >&2; [ -n "${2:-}" ] && echo "HINT: $2" >&2; exit 1; }

out=${1:?usage: build.sh OUTDIR}
: "${MAKE:=make}"
[ -n "${MAINTAINER:-}" ] || err "no maintainer for the package: this tree is not a git checkout" \
	"make deb DEB_MAINTAINER='Name <mail>' DEB_VERSION=X.Y"
: "${VERSION:=}"
for t in dpkg-deb dpkg-shlibdeps dpkg-architecture git; do
	command -v "$t" >/dev/null ||
		err "$t not found" "apt-get install dpkg-dev git (tools/setup.sh installs them)"
done
# The version: from the last release tag vX.Y, `git describe` (X.Y, or X.Y+N.gHASH
# N commits later); before any tag, user/lib/version.h's TTF_VERSION, the number of
# commits and the commit `ttftrace --version` prints (0.1+git525.f3b4ac1d32d7).
# A tree with uncommitted changes ends in .dirty.
if [ -z "$VERSION" ]; then
	if d=$(git describe --tags --match 'v[0-9]*' --long --dirty --abbrev=12 2>/dev/null); then
		VERSION=$(echo "$d" | sed -E 's/^v//; s/-0-g[0-9a-f]+//; s/-([0-9]+)-g/+\1.g/; s/-dirty$/.dirty/')
	else
		base=$(sed -n 's/^#define TTF_VERSION "\(.*\)"$/\1/p' user/lib/version.h)
		VERSION=$base+git$(git rev-list --count HEAD).$(git describe --always --dirty --abbrev=12 | sed 's/-dirty$/.dirty/')
	fi
fi
# a Debian version: starts with a digit, only [A-Za-z0-9.+~] (no revision: a native package)
[[ "$VERSION" =~ ^[0-9][A-Za-z0-9.+~]*$ ]] ||
	err "'$VERSION' is not a Debian version" "tag the release vX.Y, or set DEB_VERSION=X.Y"
arch=$(dpkg-architecture -qDEB_HOST_ARCH)

stage=$out/root
rm -rf "$stage" "$out/shlibs"
mkdir -p "$stage/DEBIAN"
$MAKE --no-print-directory install PREFIX=/usr DESTDIR="$PWD/$stage" >/dev/null

# what Debian policy asks of a package's tree: stripped binaries (12.1 in
# objcopy's flags as dh_strip uses them), a compressed man page, the copyright
# and changelog under /usr/share/doc, a conffile for /etc/default
find "$stage/usr/bin" "$stage/usr/lib" -type f \( -name ttftrace -o -name '*.so' \) | while read -r f; do
	strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f"
done
gzip -9n "$stage/usr/share/man/man8/ttftrace.8"
doc=$stage/usr/share/doc/ttftrace
install -d "$doc" "$stage/etc/default"
# the years of the first and the last commit
years=$(git log --format=%cd --date=format:%Y | sort -u | sed -n '1p;$p' | paste -sd- | sed 's/^\(.*\)-\1$/\1/')
sed "s|@YEARS@|${years:-$(date +%Y)}|" deploy/debian/copyright > "$doc/copyright"
chmod 0644 "$doc/copyright"
{
	echo "ttftrace ($VERSION) unstable; urgency=medium"
	echo
	echo "  * Built from git $(git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)."
	echo
	echo " -- $MAINTAINER  $(date -R -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")"
} | gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"
install -m 0644 deploy/systemd/ttftrace.default "$stage/etc/default/ttftrace"
echo /etc/default/ttftrace > "$stage/DEBIAN/conffiles"
for s in postinst postrm; do
	install -m 0755 "deploy/debian/$s" "$stage/DEBIAN/$s"
done

# Depends: dpkg-shlibdeps wants a debian/control to read; give it one of its own
mkdir -p "$out/shlibs/debian"
printf 'Source: ttftrace\n\nPackage: ttftrace\nArchitecture: any\n' > "$out/shlibs/debian/control"
elfs=()
while read -r f; do elfs+=("$PWD/$f"); done < <(find "$stage/usr" -type f -perm -u+x \
	-exec sh -c 'head -c4 "$1" | grep -q ELF' _ {} \; -print)
[ ${#elfs[@]} -gt 0 ] || err "no binary in $stage" "make install did not install ttftrace"
deps=$(cd "$out/shlibs" && dpkg-shlibdeps -O "${elfs[@]}" | sed -n 's/^shlibs:Depends=//p')
[ -n "$deps" ] || err "dpkg-shlibdeps found no dependency" "is $stage/usr/bin/ttftrace dynamic?"

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$arch|" -e "s|@MAINTAINER@|$MAINTAINER|" \
    -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|$deps|" deploy/debian/control.in > "$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
	xargs -0 md5sum > DEBIAN/md5sums)
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles" "$stage/DEBIAN/md5sums"

deb=$out/ttftrace_${VERSION}_$arch.deb
rm -f "$out"/ttftrace_*.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "deb: $deb"
echo "deb: Depends: $deps"
