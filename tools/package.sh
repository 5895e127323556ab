#!/usr/bin/env bash
# Builds the Debian package of Tuneup from a release build (docs/packaging.md).
#   tools/package.sh [--binary PATH] [--out DIR]
# --binary: the release `tuneup` (default .build/release/tuneup; build it with
#   `TUNEUP_COMMIT=$(git rev-parse --short=12 HEAD) swift build -c release --product tuneup`, so that
#   `tuneup --version` names the commit); it is copied, never changed.
# --out: where tuneup_VERSION_amd64.deb goes (default: the current directory). Prints its path on the last line.
# Needs dpkg-dev (dpkg-shlibdeps), binutils (strip), chrpath, python3 and gzip: tools/install-deps.sh runtime.
# VERSION is tools/packaging/changelog's newest, the version `tuneup --version` prints and a Debian revision.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
pkg="$here/packaging"
binary="$repo/.build/release/tuneup"
out="."
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) [ $# -ge 2 ] || { echo "package.sh: --binary needs a path" >&2; exit 64; }; binary=$2; shift 2 ;;
        --out) [ $# -ge 2 ] || { echo "package.sh: --out needs a directory" >&2; exit 64; }; out=$2; shift 2 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "package.sh: unknown argument '$1' (usage: tools/package.sh [--binary PATH] [--out DIR])" >&2; exit 64 ;;
    esac
done
[ -x "$binary" ] || { echo "package.sh: no executable tuneup at $binary (build it: swift build -c release --product tuneup)" >&2; exit 66; }
[ -d "$out" ] || { echo "package.sh: the output directory $out does not exist" >&2; exit 73; }
for tool in dpkg-deb dpkg-shlibdeps strip chrpath python3 gzip; do
    command -v "$tool" >/dev/null || { echo "package.sh: $tool is missing (tools/install-deps.sh runtime installs it)" >&2; exit 69; }
done

version_line=$("$binary" --version)
version=${version_line%% *}
case "$version" in
    [0-9]*) ;;
    *) echo "package.sh: '$binary --version' printed '$version_line', not a version" >&2; exit 65 ;;
esac
case "$version_line" in
    *commit*) ;;
    *) echo "package.sh: warning: '$binary --version' names no commit (build it with TUNEUP_COMMIT=\$(git rev-parse --short=12 HEAD))" >&2 ;;
esac
# The package's version is the changelog's newest: the binary's version and a Debian revision (0.1.0-1).
package_version=$(sed -n '1s/^tuneup (\([^)]*\)).*/\1/p' "$pkg/changelog")
if [ "${package_version%-*}" != "$version" ]; then
    echo "package.sh: the binary is version $version but tools/packaging/changelog's newest entry is $package_version; add an entry" >&2
    exit 65
fi
# The changelog's date is the package's date (man pages, file times): the same inputs give the same package.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date -d "$(sed -n 's/^ -- .*>  //p' "$pkg/changelog" | head -1)" +%s)}
man_date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# dpkg-shlibdeps wants the tree at debian/PACKAGE next to a debian/control.
root="$work/debian/tuneup"
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" "$root/usr/share/doc/tuneup/examples" \
    "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d" "$root/lib/udev/rules.d" "$root/lib/systemd/system" \
    "$root/etc/default"

# The binary: stripped, and without the RUNPATH $ORIGIN the Swift driver adds (the Swift runtime is linked in
# statically; every library it loads is a Debian package's, found on the default path).
install -m 755 "$binary" "$root/usr/bin/tuneup"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/tuneup"
chrpath -d "$root/usr/bin/tuneup" >/dev/null

# Man pages and completions come from the binary's own argument parser.
python3 "$pkg/make-man.py" "$root/usr/bin/tuneup" "$root/usr/share/man/man1" --date "$man_date" --version "$version" >/dev/null
gzip -9n "$root"/usr/share/man/man1/*.1
# (bash-completion sources the file: no #! line.)
"$root/usr/bin/tuneup" --generate-completion-script bash | sed '1{/^#!/d}' > "$root/usr/share/bash-completion/completions/tuneup"
"$root/usr/bin/tuneup" --generate-completion-script zsh > "$root/usr/share/zsh/vendor-completions/_tuneup"
"$root/usr/bin/tuneup" --generate-completion-script fish > "$root/usr/share/fish/vendor_completions.d/tuneup.fish"

install -m 644 "$repo/tools/udev/70-tuneup-usb.rules" "$root/lib/udev/rules.d/"
# The Wireshark dissectors (docs/wireshark.md): Debian's Wireshark loads Lua plugins from its global plugin folder and
# its subfolders (`tshark -G folders`).
wireshark="$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/wireshark/plugins/tuneup"
mkdir -p "$wireshark"
install -m 644 "$repo"/tools/wireshark/*.lua "$wireshark/"
install -m 644 "$pkg/tuneup-receive.service" "$pkg/tuneup-hub.service" "$pkg/tuneup-station@.service" "$root/lib/systemd/system/"
for f in "$pkg"/default/*; do install -m 644 "$f" "$root/etc/default/"; done
install -m 644 "$pkg/copyright" "$root/usr/share/doc/tuneup/copyright"
gzip -9n < "$pkg/changelog" > "$root/usr/share/doc/tuneup/changelog.Debian.gz"
install -m 644 "$pkg/station.conf" "$root/usr/share/doc/tuneup/examples/station.conf"
if [ -d "$pkg/lintian" ]; then
    mkdir -p "$root/usr/share/lintian/overrides"
    install -m 644 "$pkg/lintian/tuneup" "$root/usr/share/lintian/overrides/tuneup"
fi

install -m 755 "$pkg/postinst" "$pkg/postrm" "$root/DEBIAN/"
(cd "$root" && find etc -type f | sed 's|^|/|' | sort) > "$root/DEBIAN/conffiles"

# Depends: what the binary links (dpkg-shlibdeps), and the libraries it opens with dlopen on first use
# (Sources/CSndfile, CSoxr, CCurl, CALSA, CQpidProton: audio decoding, resampling, web streams, the receiver's sound
# card, CFX publishing), which no linker table shows.
printf 'Source: tuneup\n\nPackage: tuneup\nArchitecture: amd64\n' > "$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O -e debian/tuneup/usr/bin/tuneup 2>"$work/shlibdeps.log") || {
    cat "$work/shlibdeps.log" >&2; echo "package.sh: dpkg-shlibdeps failed" >&2; exit 69; }
depends="${shlibs#shlibs:Depends=}, libsndfile1, libsoxr0, libcurl4, libasound2, libqpid-proton11, adduser"
installed_kb=$(du -sk --exclude=DEBIAN "$root" | cut -f1)

cat > "$root/DEBIAN/control" <<EOF
Package: tuneup
Version: $package_version
Architecture: amd64
Maintainer: Tuneup maintainers <maintainers@users.noreply.a-seed-7c788c99.example>
Installed-Size: $installed_kb
Depends: $depends
Recommends: librsvg2-bin
Section: utils
Priority: optional
Description: tools and simulators for LightX headsets and HKWirelessHD speakers
 tuneup flashes, probes and configures headsets that speak Avnera's LightX
 protocol over USB, Bluetooth, serial lines and TCP; provisions them on a
 factory line with recipes and records; controls HKWirelessHD speakers, plays
 to them in sync, and can itself be a speaker (tuneup-receive.service); and
 reads Bose Wearable sensors. Simulated devices for each family are built in.
 .
 The systemd units tuneup-receive, tuneup-hub and tuneup-station@ are
 installed but not enabled.
EOF

(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
deb="$out/tuneup_${package_version}_amd64.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
