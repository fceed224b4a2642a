/* layers: base core driver */
/* fuzz_ipmi_sel.c - libFuzzer target for the IPMI driver's own decoding of SEL records
 * (driver/bmc_ipmi_parse.h: ipmi_sel_entry_json), the one place where it reads BMC bytes
 * without libfreeipmi's fiid templates: Get SEL Entry's 16-byte record_data (IPMI 2.0
 * section 32) goes to it as is. The input is cut into 16-byte records (at most 256; a short
 * tail is padded with zeros) and each is decoded with a parse-only SEL context (no IPMI
 * session, no SDR), like ipmi_sel_read does after its walk. Covered: record id, record type
 * classes (system event 0x02, timestamped OEM 0xc0-0xdf, non-timestamped OEM 0xe0-0xff,
 * unknown types), the timestamp rules (0, pre-init 0x00000001-0x20000000, 0xffffffff,
 * dates up to 2106), sensor type/number, event type classes, event direction, libfreeipmi's
 * "%E" event text for any event data bytes. Properties checked (a failure aborts): the entry
 * dumps to JSON; "id" is bytes 0-1 little-endian; "raw" is the 32 lowercase hex digits of the
 * record; "timestamp" is null or an RFC 3339 UTC time; "sensorType" and "message" are
 * strings (so libfreeipmi's text was UTF-8); a system event record has "sensorNumber" equal
 * to byte 11 and an "eventType". The chassis status, boot flags and Get Device ID answers are
 * not fuzzed here: libfreeipmi's fiid templates decode them into fixed-width fields. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "driver/bmc_ipmi_parse.h"

#include "base/banned.h"

static void die(const char *what, const uint8_t *rec)
{
	fprintf(stderr, "fuzz_ipmi_sel: %s; record", what);
	for (int i = 0; i < IPMI_SEL_RECORD_LEN; i++)
		fprintf(stderr, " %02x", rec[i]);
	fprintf(stderr, "\n");
	abort();
}

static void check_entry(const json_t *e, const uint8_t *rec)
{
	char *s = e ? jsonx_dumps(e) : NULL;
	if (!s)
		die("entry is NULL or does not dump", rec);
	free(s);
	if (json_integer_value(json_object_get(e, "id")) != (rec[0] | rec[1] << 8) ||
	    !json_is_integer(json_object_get(e, "id")))
		die("id is not bytes 0-1", rec);
	char raw[2 * IPMI_SEL_RECORD_LEN + 1];
	for (int i = 0; i < IPMI_SEL_RECORD_LEN; i++)
		snprintf(raw + 2 * i, 3, "%02x", rec[i]);
	const char *r = json_string_value(json_object_get(e, "raw"));
	if (!r || strcmp(r, raw) != 0)
		die("raw is not the record in hex", rec);
	const json_t *ts = json_object_get(e, "timestamp");
	if (!json_is_null(ts)) {
		const char *t = json_string_value(ts);
		/* 2023-11-14T22:13:20.000Z (fp_time_format): digits where digits go */
		static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";
		if (!t || strlen(t) != sizeof(pat) - 1)
			die("timestamp is not null or RFC 3339", rec);
		for (size_t i = 0; i < sizeof(pat) - 1; i++)
			if (pat[i] == 'd' ? (t[i] < '0' || t[i] > '9') : t[i] != pat[i])
				die("timestamp is not RFC 3339", rec);
	}
	if (!json_is_string(json_object_get(e, "sensorType")) ||
	    !json_is_string(json_object_get(e, "message")))
		die("sensorType or message missing (not UTF-8?)", rec);
	if (rec[2] == 0x02) { /* system event record */
		if (json_integer_value(json_object_get(e, "sensorNumber")) != rec[11] ||
		    !json_is_string(json_object_get(e, "eventType")))
			die("system event without sensorNumber (byte 11) or eventType", rec);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ipmi_sel_ctx_t sc;
	if (!sc && !(sc = ipmi_sel_ctx_create(NULL, NULL)))
		abort();
	size_t n = (size + IPMI_SEL_RECORD_LEN - 1) / IPMI_SEL_RECORD_LEN;
	if (n > 256)
		n = 256;
	for (size_t i = 0; i < n; i++) {
		uint8_t rec[IPMI_SEL_RECORD_LEN] = {0};
		size_t off = i * IPMI_SEL_RECORD_LEN;
		size_t len = size - off < IPMI_SEL_RECORD_LEN ? size - off : IPMI_SEL_RECORD_LEN;
		memcpy(rec, data + off, len);
		json_t *e = ipmi_sel_entry_json(sc, rec);
		check_entry(e, rec);
		json_decref(e);
	}
	return 0;
}
