# jget.awk - prints the value at one path of a JSON document (stdin) with no newline added:
#   awk -v want=image.url -f jget.awk <doc.json
# Paths are keys joined by "." (array members by index: disks.0.name). Strings are decoded
# (\n \t \r \" \\ \/ and \u00XX; other \uXXXX become "?"), other scalars are printed as written
# (null, true, 123). Exit 1 when the path is absent or the document is not JSON it understands.
# Busybox awk (the ramdisk's) and mawk/gawk run it.
function hexval(h,   k, v, c) {
	v = 0
	for (k = 1; k <= length(h); k++) {
		c = index("0123456789abcdef", tolower(substr(h, k, 1)))
		if (c == 0) return -1
		v = v * 16 + c - 1
	}
	return v
}
function ws() {
	while (pos <= n && index(" \t\r\n", substr(s, pos, 1)) > 0) pos++
}
function str(   out, c, v) {
	pos++
	out = ""
	while (pos <= n) {
		c = substr(s, pos, 1)
		if (c == "\"") { pos++; return out }
		if (c == "\\") {
			pos++
			c = substr(s, pos, 1)
			if (c == "n") out = out "\n"
			else if (c == "t") out = out "\t"
			else if (c == "r") out = out "\r"
			else if (c == "b" || c == "f") out = out ""
			else if (c == "u") {
				v = hexval(substr(s, pos + 1, 4))
				out = out ((v >= 32 && v < 127) || v == 10 || v == 9 ? sprintf("%c", v) : "?")
				pos += 4
			} else out = out c
			pos++
		} else { out = out c; pos++ }
	}
	bad = 1
	return out
}
function emit(path, v) {
	if (path == want && !found) { printf "%s", v; found = 1 }
}
function val(path,   c, k, idx, start) {
	ws()
	c = substr(s, pos, 1)
	if (c == "{") {
		pos++; ws()
		if (substr(s, pos, 1) == "}") { pos++; return }
		while (pos <= n && !bad) {
			ws()
			if (substr(s, pos, 1) != "\"") { bad = 1; return }
			k = str(); ws()
			if (substr(s, pos, 1) != ":") { bad = 1; return }
			pos++
			val(path == "" ? k : path "." k)
			ws(); c = substr(s, pos, 1); pos++
			if (c == "}") return
			if (c != ",") { bad = 1; return }
		}
		return
	}
	if (c == "[") {
		pos++; ws()
		if (substr(s, pos, 1) == "]") { pos++; return }
		idx = 0
		while (pos <= n && !bad) {
			val(path == "" ? idx : path "." idx)
			idx++
			ws(); c = substr(s, pos, 1); pos++
			if (c == "]") return
			if (c != ",") { bad = 1; return }
		}
		return
	}
	if (c == "\"") { emit(path, str()); return }
	start = pos
	while (pos <= n && index(",}] \t\r\n", substr(s, pos, 1)) == 0) pos++
	if (pos == start) { bad = 1; return }
	emit(path, substr(s, start, pos - start))
}
{ s = s $0 "\n" }
END {
	n = length(s); pos = 1; found = 0; bad = 0
	val("")
	exit(found && !bad ? 0 : 1)
}
