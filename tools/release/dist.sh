#!/usr/bin/env bash
# Release archives (make dist): bulwark and its providers for linux and
# darwin on amd64 and arm64 and for windows/amd64, one
# dist/bulwark_VERSION_OS_ARCH.tar.gz each (a .zip for Windows, whose
# programs end in .exe),
# laid out as the plugin lookup wants them (bulwark and bulwark-graphviz,
# plugins/bulwark-provider-*),
# and dist/SHA256SUMS. Static (CGO_ENABLED=0), -trimpath, stripped; the
# archives are reproducible for a commit (file times are the commit's, owner 0).
#
# Why not GoReleaser: v2.15.1 (the newest that builds with Go 1.26 here)
# compiles ~1,700 packages (cloud SDKs, cosign, kind…): 22 minutes on this
# project's shared 2-core machine (5 minutes of CPU), on every new machine,
# before it builds anything of ours. This needs only go, GNU tar, gzip and
# sha256sum (and zip for the Windows archive), and makes the same archives.
#
# usage: dist.sh VERSION   (DIST_PLATFORMS, DIST_PROVIDERS narrow it)
set -euo pipefail
version=${1:?usage: dist.sh VERSION (e.g. v0.1.0)}
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || { echo "dist: version $version: want vMAJOR.MINOR.PATCH[-PRE]" >&2; exit 1; }
cd "$(dirname "$0")/../.."
platforms=${DIST_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64}
providers=${DIST_PROVIDERS:-mock local aws}
commit=$(git rev-parse HEAD)
stamp=$(git log -1 --format=%ct)
out=dist
rm -rf "$out"
mkdir -p "$out"
start=$SECONDS
for platform in $platforms; do
  goos=${platform%/*} goarch=${platform#*/}
  name=bulwark_${version#v}_${goos}_${goarch}
  stage=$out/$name
  mkdir -p "$stage/plugins"
  exe=
  [ "$goos" = windows ] && exe=.exe
  build() { CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=auto "$@"; }
  build -ldflags "-s -w -X main.version=$version -X main.commit=$commit" -o "$stage/bulwark$exe" ./cmd/bulwark
  build -ldflags "-s -w" -o "$stage/bulwark-graphviz$exe" ./cmd/bulwark/cmd/bulwark-graphviz
  for p in $providers; do
    build -ldflags "-s -w" -o "$stage/plugins/bulwark-provider-$p$exe" "./plugins/$p/cmd/bulwark-provider-$p"
  done
  cp -R README.md docs "$stage/"
  if [ "$goos" = windows ]; then
    # zip stores each file's time: the commit's, as tar's --mtime; -X
    # leaves out the owner and extra times, -D the folder entries; the
    # names are given sorted.
    find "$stage" -exec touch -h -d "@$stamp" {} +
    (cd "$out" && find "$name" -type f | LC_ALL=C sort | TZ=UTC zip -q -X -D -9 "$name.zip" -@)
    archive=$out/$name.zip
  else
    tar --sort=name --mtime="@$stamp" --owner=0 --group=0 --numeric-owner -C "$out" -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
    archive=$out/$name.tar.gz
  fi
  rm -rf "$stage"
  echo "dist: $archive ($((SECONDS - start))s)"
done
(cd "$out" && sha256sum -- bulwark_* >SHA256SUMS)
cat "$out/SHA256SUMS"
