#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Fetch a Debian cloud kernel for the QEMU tiers into DIR (default
# .output/qemu/kernel) and print its vmlinuz path. Idempotent.
#
#   tests/qemu/fetch_kernel.sh [--arch amd64|arm64] [--version 6.1|5.10] [DIR]
#
#   --version 6.1   Debian 12's linux-image-6.1.0-N-cloud-<arch>-unsigned (default)
#   --version 5.10  Debian 11's linux-image-5.10.0-N-cloud-amd64-unsigned
#   --arch arm64    also busybox-static:arm64, unpacked into DIR/busybox (the
#                   initramfs's shell: the host's busybox is amd64)
#
# Packages are downloaded, not installed, and unpacked with dpkg-deb -x. 6.1 on
# amd64 comes through the system's apt (Debian 12's sources, tools/setup.sh);
# anything else through an apt state of its own in DIR/apt (its own sources
# file, lists and empty dpkg status: apt-get -o Dir::Etc::sourcelist=...), so
# the system's sources, lists and architectures stay as they are. The newest
# package is taken that the mirror serves: bullseye-security's index was seen
# listing a newer kernel than its pool held (404), then the next older one is
# tried.
set -euo pipefail
arch=amd64
version=6.1
while [ $# -gt 0 ]; do
	case $1 in
	--arch) arch=$2; shift 2 ;;
	--version) version=$2; shift 2 ;;
	-*) echo "Error: unknown option $1" >&2
	    echo "HINT: tests/qemu/fetch_kernel.sh [--arch amd64|arm64] [--version 6.1|5.10] [DIR]" >&2
	    exit 2 ;;
	*) break ;;
	esac
done
case $arch/$version in
amd64/6.1 | arm64/6.1) suite=bookworm abi=6.1.0 ;;
amd64/5.10) suite=bullseye abi=5.10.0 ;;
*) echo "Error: no kernel known for --arch $arch --version $version" >&2
   echo "HINT: amd64 with 6.1 or 5.10, arm64 with 6.1" >&2
   exit 2 ;;
esac
dir=${1:-.output/qemu/kernel}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

have=$(ls "$dir"/boot/vmlinuz-"$version".* 2>/dev/null | head -n1 || true)
if [ -n "$have" ] && { [ "$arch" != arm64 ] || [ -x "$dir/busybox/bin/busybox" ]; }; then
	echo "$have"
	exit 0
fi

apt_opts=()
if [ "$arch/$version" != amd64/6.1 ]; then
	# A private apt state: sources, lists, package cache and dpkg status of its own.
	a=$dir/apt
	mkdir -p "$a/lists/partial"
	: > "$a/status"
	sec=$suite-security
	cat > "$a/sources.list" <<-EOF
	deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main
	deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite-updates main
	deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security $sec main
	EOF
	apt_opts=(-o Dir::Etc::sourcelist="$a/sources.list" -o Dir::Etc::sourceparts=-
		  -o Dir::State::Lists="$a/lists" -o Dir::State::status="$a/status"
		  -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
		  -o APT::Architecture="$arch" -o APT::Architectures::="$arch")
	if [ ! -e "$a/updated" ]; then
		apt-get "${apt_opts[@]}" -qq update >"$a/update.log" 2>&1 || {
			echo "Error: apt-get update of the private $suite ($arch) lists failed" >&2
			echo "HINT: needs network access to deb.debian.org; see $a/update.log" >&2
			exit 1
		}
		touch "$a/updated"
	fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# download NAME-REGEX: the newest package matching it that downloads, into $tmp
download() {
	local pkg
	for pkg in $(apt-cache "${apt_opts[@]}" search --names-only "$1" |
		     awk '{print $1}' | sort -rV); do
		if (cd "$tmp" && apt-get "${apt_opts[@]}" download "$pkg" >"$tmp/dl.log" 2>&1); then
			ls "$tmp"/"$pkg"_*.deb
			return 0
		fi
		echo "fetch_kernel: $pkg not served by the mirror, trying an older one" >&2
	done
	return 1
}

deb=$(download "^linux-image-${abi//./\\.}-[0-9]+-cloud-$arch-unsigned\$") || {
	echo "Error: no linux-image-$abi-*-cloud-$arch-unsigned package could be downloaded" >&2
	echo "HINT: needs Debian $suite sources and network access (apt-get update)" >&2
	exit 1
}
dpkg-deb -x "$deb" "$tmp/x"
rm -rf "$dir/boot"
cp -r "$tmp/x/boot" "$dir/"
if [ "$arch" = arm64 ]; then
	deb=$(download '^busybox-static$') || {
		echo "Error: busybox-static:arm64 could not be downloaded" >&2
		echo "HINT: needs network access to deb.debian.org" >&2
		exit 1
	}
	rm -rf "$dir/busybox"
	dpkg-deb -x "$deb" "$dir/busybox"
fi
ls "$dir"/boot/vmlinuz-"$version".* | head -n1
