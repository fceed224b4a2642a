# bmc-conf.sh - sourced: the files one OpenIPMI ipmi_sim BMC starts from (ipmi_sim(1) and
# ipmi_lan(5)), shared by ipmisim.sh and the PXE test bed (tests/peers/pxe/pxe.sh).
#
#   ipmisim_lan_conf DIR NAME PORT USER PASSWORD GUID [LINE...]
#       writes DIR/lan.conf (mode 0600: it holds the password): one LAN channel on 127.0.0.1:PORT
#       with every auth type allowed, user 2 = USER/PASSWORD at admin privilege, GUID (32 hex
#       digits), DIR/chassis_control as the chassis control program, and each LINE inside the
#       MC section (e.g. a "serial 15 ..." console).
#   ipmisim_emu DIR [SEL]
#       writes DIR/sim.emu: one BMC at 0x20 with a SEL; SEL=1 adds one system event record
#       (type 0x02, generator 0x20, sensor type 0x01 temperature, sensor #1, event type 0x01
#       threshold, data 0x5a; IPMI 2.0 section 32.1).

ipmisim_lan_conf() {
	local dir=$1 name=$2 port=$3 user=$4 pw=$5 guid=$6 extra=""
	shift 6
	for l in "$@"; do extra+="  $l"$'\n'; done
	(
		umask 077
		cat >"$dir/lan.conf" <<CONF
name "$name"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 $port
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid $guid
  endlan
${extra}  user 2 true  "$user" "$pw" admin 10 none md2 md5 straight
  chassis_control "$dir/chassis_control 0x20"
CONF
	)
}

ipmisim_emu() {
	local dir=$1 sel=${2:-0}
	{
		echo "mc_setbmc 0x20"
		echo "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr"
		echo "sel_enable 0x20 1000 0x0a"
		[ "$sel" != 1 ] || echo "sel_add 0x20 0x02 0x00 0x00 0x00 0x00 0x20 0x00 0x04 0x01 0x01 0x01 0x5a 0x00 0x00"
		echo "mc_enable 0x20"
	} >"$dir/sim.emu"
}
