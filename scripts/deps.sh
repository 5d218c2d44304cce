#!/usr/bin/env bash
# Installs the Debian packages ecnswitch's tests and testbed need, when they
# are missing. Idempotent; quiet when everything is present.
set -euo pipefail

need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing ${need[*]}; run as root or install them: apt-get install ${need[*]}" >&2
		exit 1
	fi
	echo "deps: installing ${need[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
go mod download
