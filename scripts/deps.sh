#!/usr/bin/env bash
# Installs the real ZooKeeper server and the Curator jars the tests run
# against, from Debian's packages, when they are missing.
set -euo pipefail

pkgs=(zookeeper libcurator-recipes-java libcurator-framework-java libcurator-client-java libcurator-discovery-java)
missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
command -v java >/dev/null || missing+=(default-jre-headless)
command -v javac >/dev/null || missing+=(default-jdk-headless)
# zsh and fish only check zkr's completion scripts (the tests skip a shell
# that is missing): installed where we may, never required.
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
	command -v zsh >/dev/null || missing+=(zsh)
	command -v fish >/dev/null || missing+=(fish)
fi

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
	echo "missing: ${missing[*]}" >&2
	echo "install them with: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
	echo "(or point ZK_HOME at an Apache ZooKeeper 3.8 tarball, or ZK_CONNECT at a server)" >&2
	exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
