# guest-lib.sh - shell functions shared by the ramdisk's /init and the OS image's
# /init (busybox ash; installed as /etc/fp-lib.sh). See ../build-ramdisk.sh.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

say() { echo "$*" >/dev/console 2>/dev/null || echo "$*"; }

stay_up() { # never returns: the control plane power-cycles the machine through its BMC
	while :; do sleep 3600; done
}

fp_mounts() {
	mkdir -p /proc /sys /dev /tmp /run /mnt
	mount -t proc proc /proc 2>/dev/null
	mount -t sysfs sysfs /sys 2>/dev/null
	mount -t devtmpfs devtmpfs /dev 2>/dev/null
	mkdir -p /dev/pts
	echo 4 >/proc/sys/kernel/printk 2>/dev/null # keep module chatter off the console
}

fp_load_modules() { # the modules in /lib/modules/load-order, dependencies first
	local m dir
	dir=$(ls -d /lib/modules/*/ 2>/dev/null | head -n1)
	[ -f /lib/modules/load-order ] || return 0
	while read -r m; do
		[ -n "$m" ] || continue
		insmod "$dir$m" 2>/dev/null || true
	done </lib/modules/load-order
}

fp_cmdline() { # KEY: prints fleetplane.KEY's value from /proc/cmdline (empty when absent)
	local w
	for w in $(cat /proc/cmdline); do
		case $w in "fleetplane.$1="*) echo "${w#*=}"; return 0 ;; esac
	done
	return 0
}

fp_find_iface() { # [MAC]: the interface with that MAC (any case), else the first physical one
	local want i a
	want=$(echo "${1:-}" | tr 'A-F' 'a-f')
	for i in $(seq 1 50); do
		for a in /sys/class/net/*; do
			[ -e "$a/device" ] || continue
			if [ -z "$want" ] || [ "$(tr 'A-F' 'a-f' <"$a/address")" = "$want" ]; then
				echo "${a##*/}"
				return 0
			fi
		done
		sleep 0.2
	done
	return 1
}

fp_wait_carrier() { # IFACE SECONDS
	local n=0
	ip link set "$1" up
	while [ "$n" -lt $(($2 * 5)) ]; do
		[ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ] && return 0
		sleep 0.2
		n=$((n + 1))
	done
	return 1
}

fp_prefix() { # dotted NETMASK -> prefix length
	local bits=0 o IFS=.
	for o in $1; do
		case $o in
		255) bits=$((bits + 8)) ;; 254) bits=$((bits + 7)) ;; 252) bits=$((bits + 6)) ;;
		248) bits=$((bits + 5)) ;; 240) bits=$((bits + 4)) ;; 224) bits=$((bits + 3)) ;;
		192) bits=$((bits + 2)) ;; 128) bits=$((bits + 1)) ;;
		esac
	done
	echo "$bits"
}

json_str() { # TEXT -> a JSON string (quotes, backslashes and control characters escaped)
	printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr -d '\000-\037')"
}

jget() { # PATH < JSON: the value at PATH (see jget.awk)
	awk -v want="$1" -f /etc/fp-jget.awk
}

http_post() { # URL JSON: prints the body; exit status of wget (busybox: no -T, it segfaults)
	wget -q -O - --header 'Content-Type: application/json' --post-data "$2" "$1"
}

fp_cidata_dev() { # [DISK]: the partition labelled CIDATA (on DISK when given), waiting up to 10 s
	local i d
	for i in $(seq 1 50); do
		d=$(findfs LABEL=CIDATA 2>/dev/null || findfs LABEL=cidata 2>/dev/null) || d=""
		if [ -n "$d" ]; then
			case $d in "${1:-}"*) echo "$d"; return 0 ;; esac
		fi
		sleep 0.2
	done
	return 1
}
