#!/usr/bin/env bash
# The device machine has no sshd, tmux or perftriage's dependencies and no
# network: build what scripts/h200_walk.py needs there, in two ignored folders
# a `run` carries (.whl: wheels for its Python 3.12; .dev: this machine's
# sshd, ssh-keygen and tmux with the libraries they link, behind wrappers that
# set LD_LIBRARY_PATH). Run here from the repo's root, then on the device:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site H200_SITE=/tmp/site PATH=$PWD/.dev/bin:/tmp/site/bin:$PATH
#   export PERFTRIAGE_TEST_SSHD=$PWD/.dev/bin/sshd H200_TMUX=$PWD/.dev/bin/tmux
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
for d in /.whl/ /.dev/; do grep -qx "$d" .git/info/exclude || echo "$d" >>.git/info/exclude; done
# the versions installed here (the newest where one is not installed)
ver() { python3 -m pip show "$1" 2>/dev/null | awk '/^Version:/{print "=="$2}' || true; }
pkgs=()
for p in textual asyncssh cryptography cffi pycparser msgspec ClusterShell google-re2 simpleeval \
         tomlkit platformdirs py-spy rich textual-serve mdit-py-plugins linkify-it-py uc-micro-py \
         markdown-it-py mdurl; do pkgs+=("$p$(ver "$p")"); done
rm -rf .whl
plat=()
for n in 5 17 24 27 28 31 34 35; do plat+=(--platform "manylinux_2_${n}_x86_64"); done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${plat[@]}" --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${pkgs[@]}"
rm -rf .dev && mkdir -p .dev/bin .dev/lib
for b in /usr/sbin/sshd /usr/bin/ssh-keygen /usr/bin/tmux; do
    name=$(basename "$b")
    cp "$b" ".dev/bin/$name.real"
    # glibc itself stays the machine's; everything else it links travels
    ldd "$b" | awk '$3 ~ /^\// {print $3}' | grep -vE '/(libc|libm|libresolv|libdl|libpthread|librt)\.so' \
        | xargs -r cp -n -t .dev/lib
    # sshd re-executes itself by the absolute path it was started with
    printf '#!/bin/sh\nd=$(dirname "$(readlink -f "$0")")\nLD_LIBRARY_PATH="$d/../lib" exec "$d/%s.real" "$@"\n' \
        "$name" >".dev/bin/$name"
    chmod +x ".dev/bin/$name"
done
du -sh .whl .dev
