#!/bin/sh
# Runs a command of this repository inside a Debian 13 (trixie) root, so the
# library is built and tested against Debian 13's LibTorch 2.6 on a Debian 12
# machine. As root (or through sudo).
#
#   sh cmake/debian13.sh                      the README's test command
#   sh cmake/debian13.sh 'sh cmake/setup.sh && build/bin/gpt2 train'
#   sh cmake/debian13.sh prepare              the root and its packages only
#                                             (CI makes it while the first leg builds)
#
# The root is made once with debootstrap (Debian's package; the trixie suite
# comes from the same Debian archive as the machine's) in build/debian13/root
# and reused while build/debian13/root/.complete is there. The repository is
# bound at /src inside it and build/debian13/build is bound over /src/build,
# so the command's build/ is the Debian 13 one and the machine's build/ is
# left alone. The mounts live in a private mount namespace and go with it.
set -eu

# The README's test command, with each phase's time.
timed='s=$(date +%s); sh cmake/setup.sh all || exit 1; echo "debian13: set-up and build took $(( $(date +%s) - s )) s";
s=$(date +%s); rc=0; ctest --preset default || rc=$?; echo "debian13: ctest took $(( $(date +%s) - s )) s"; exit $rc'
command=${1:-$timed}
[ "$command" = prepare ] && command="sh cmake/setup.sh deps"
mirror=${GPT2_DEBIAN_MIRROR:-http://deb.debian.org/debian}

cd "$(dirname "$0")/.."
repo=$(pwd)
root="$repo/build/debian13/root"
build="$repo/build/debian13/build"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

if [ ! -e "$root/.complete" ]; then
  if ! command -v debootstrap >/dev/null 2>&1; then
    echo "debian13: installing debootstrap"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
  fi
  echo "debian13: making a trixie root in $root (debootstrap, once)"
  made=$(date +%s)
  $sudo rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  $sudo debootstrap --variant=minbase trixie "$root" "$mirror" >"$repo/build/debian13/debootstrap.log" 2>&1 ||
    { tail -20 "$repo/build/debian13/debootstrap.log" >&2; echo "debian13: debootstrap failed" >&2; exit 1; }
  $sudo touch "$root/.complete"
  echo "debian13: debootstrap took $(( $(date +%s) - made )) s"
fi
mkdir -p "$build" "$root/src"

# Inside a private mount namespace: the root bound onto itself (so that its
# / is a mount point, as `ip netns` needs), /proc, /dev, /sys, /run, /tmp,
# the machine's name resolution, the repository at /src and the Debian 13
# build folder over /src/build.
exec $sudo unshare --mount --propagation private sh -eu -c '
  root=$1 repo=$2 build=$3 command=$4
  mount --bind "$root" "$root"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount -t sysfs sys "$root/sys"
  mount -t tmpfs tmpfs "$root/run"
  mount -t tmpfs tmpfs "$root/tmp"
  cp /etc/resolv.conf /etc/hosts "$root/etc/"
  mount --bind "$repo" "$root/src"
  mount --bind "$build" "$root/src/build"
  exec chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
    HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" GPT2_CMAKE_ARGS="$5" sh -c "cd /src && $command"
' debian13 "$root" "$repo" "$build" "$command" "${GPT2_CMAKE_ARGS:-}"
