# fleetplane build. `make` builds ./fleetplane; `make test` runs unit and integration tests.
# SAN=1 builds with ASan+UBSan into build-san/ (binary ./fleetplane-san); TSAN=1 builds with
# ThreadSanitizer into build-tsan/ (`make tsan` runs the threaded suites under it).
CC      ?= cc
PKGS    := libmicrohttpd jansson sqlite3 libcurl libsodium libfreeipmi libxml-2.0
# kube (issue 13): GnuTLS makes the API's self-signed certificate (src/api/tls.c)
PKGS    += gnutls
# packaging (issue 15): sd_notify for the Type=notify units (src/cmd/sdnotify.c)
PKGS    += libsystemd
# cli (issue 15): libyaml writes `-o yaml` (src/cmd/cli_fmt.c)
PKGS    += yaml-0.1
SAN     ?= 0
TSAN    ?= 0
ifeq ($(TSAN),1)
BUILD   ?= build-tsan
BIN     ?= fleetplane-tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
OPT     ?= -O1 -g
else ifeq ($(SAN),1)
BUILD   ?= build-san
BIN     ?= fleetplane-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT     ?= -O1 -g
else
BUILD   ?= build
BIN     ?= fleetplane
SANFLAGS :=
OPT     ?= -O2 -g
endif
WARN    := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wmissing-prototypes \
           -Wstrict-prototypes -Wformat=2 -Wundef -Wvla
CFLAGS  += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) \
           -pthread -Isrc $(SANFLAGS) $(shell pkg-config --cflags $(PKGS))
LDLIBS  += $(shell pkg-config --libs $(PKGS)) -lpthread -lm -ldl
LDFLAGS += $(SANFLAGS) -pthread

LAYERS  := base core store driver engine sched boot controller api agent sim fleet cmd
SRC_ALL := $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c))
OBJ_ALL := $(patsubst src/%.c,$(BUILD)/%.o,$(SRC_ALL)) $(BUILD)/main.o
LIB_OBJ = $(patsubst src/%.c,$(BUILD)/%.o,$(foreach l,$(1),$(wildcard src/$(l)/*.c)))

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

.PHONY: all clean test unit peers integration slow ops san fuzz bench check check-banned style check-layers tsan
all: $(BIN)

$(BIN): $(OBJ_ALL)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# obs (issue 15): the commit compiled into base/version.c (fleetplane_build_info, `version`);
# "unknown" outside a git tree. The stamp changes only when the commit does, so a new commit
# rebuilds one object.
FP_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
$(BUILD)/base/version.o: CFLAGS += -DFP_COMMIT='"$(FP_COMMIT)"'
$(BUILD)/base/version.o: $(BUILD)/commit.stamp
$(BUILD)/commit.stamp: FORCE
	@mkdir -p $(dir $@); [ "$$(cat $@ 2>/dev/null)" = "$(FP_COMMIT)" ] || echo "$(FP_COMMIT)" > $@
.PHONY: FORCE

# web (issue 15): the fleet page (web/) compiled into serve: scripts/embed.c, built first with the
# same compiler (xxd and python3 are not build dependencies), writes the header src/api/ui.c
# includes.
UI_FILES := $(sort $(wildcard web/*.html web/*.css web/*.js web/*.svg))
$(BUILD)/embed: scripts/embed.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 $(WARN) -o $@ $<
$(BUILD)/gen/ui_assets.h: $(BUILD)/embed $(UI_FILES)
	@mkdir -p $(dir $@)
	$(BUILD)/embed $@ $(UI_FILES)
$(BUILD)/api/ui.o: $(BUILD)/gen/ui_assets.h
$(BUILD)/api/ui.o: CFLAGS += -I$(BUILD)/gen

# A unit test names the layers it links on its first line: /* layers: base core store */
test_layers = $(shell sed -n '1s|^/\* layers: \(.*\) \*/|\1|p' $(1))
# Every unit test also links tests/unit/support/filter.o (FP_TEST_FILTER / F=, see run-unit.sh).
$(BUILD)/tests/support/filter.o: tests/unit/support/filter.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<
# A test that links the fleet layer also links the shared world, tests/unit/support/harness.c.
$(BUILD)/tests/support/harness.o: tests/unit/support/harness.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<
test_support = $(BUILD)/tests/support/filter.o $(if $(filter fleet,$(call test_layers,$(1))),$(BUILD)/tests/support/harness.o)
define UNIT_RULE
$(BUILD)/tests/$(basename $(notdir $(1))): $(1) $(call test_support,$(1)) $(call LIB_OBJ,$(call test_layers,$(1)))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -MMD -MP -MF $$@.d -o $$@ $$< $$(filter %.o,$$^) -lcmocka $$(LDLIBS)
endef
$(foreach t,$(UNIT_SRC),$(eval $(call UNIT_RULE,$(t))))

# The suites that start real peers (ipmi_sim, the Redfish server, Slurm; tests/peers/) are not unit
# tests: `make peers` runs them, in the integration tier of `test` and `san`.
PEER_BIN := $(BUILD)/tests/test_bmc_ipmi $(BUILD)/tests/test_bmc_redfish \
	    $(BUILD)/tests/test_slurm_peer_cli
# T=REGEX picks suites, F=GLOB test cases, UNIT_TIMEOUT=S the per-binary limit (run-unit.sh).
unit: $(filter-out $(PEER_BIN),$(UNIT_BIN))
	@scripts/run-unit.sh $^

peers: $(PEER_BIN)
	@scripts/run-unit.sh $^

integration: $(BIN)
	@FLEETPLANE_BIN=$(CURDIR)/$(BIN) FP_SAN=$(SAN) tests/integration/run.sh

# The slow tier: real VMs (qemu behind ipmi_sim, dnsmasq; tests/slow/), root only. A test that
# cannot run says why; that is a skip for a user who is not root and a failure for root (CI).
slow: $(BIN)
	@FLEETPLANE_BIN=$(CURDIR)/$(BIN) tests/run-tier.sh tests/slow slow

# The ops tier: what an operator runs it as and watches it with (the Debian package and its
# systemd units, Prometheus rules and dashboards against a real Prometheus, the fleet page in
# headless Chromium; tests/ops/). Root only, like slow: a skip is a failure for root (CI).
ops: $(BIN)
	@FLEETPLANE_BIN=$(CURDIR)/$(BIN) tests/run-tier.sh tests/ops ops

# Unit then integration, one after the other (parallel builds inside each, not parallel runs).
test: check-banned
	$(MAKE) unit
	$(MAKE) peers
	$(MAKE) integration

# Banned functions (base/banned.h lists why), caught even where the header is not included.
check-banned:
	@! grep -nE '\b(strcpy|strcat|sprintf|vsprintf|strtok|atoi|gmtime|localtime)\s*\(' \
		$$(find src tests -name '*.c' -o -name '*.h' | grep -v base/banned.h) \
		| grep -vE 'snprintf|vsnprintf|strtok_r|gmtime_r|localtime_r|BANNED' \
		|| { echo "banned function used (see src/base/banned.h)"; exit 1; }

# Every tracked .c/.h of src/ tests/ bench/ formatted as .clang-format says (a diff otherwise).
style:
	@scripts/reformat.sh --check

# Include rules (layers, *_int.h, test layers lines, cycles); scripts/layers-known.txt waives
# the violations being removed.
check-layers:
	@python3 scripts/check-layers.py

# ThreadSanitizer over the suites that run threads (engine, store, API, controllers).
TSAN_SUITES := store workqueue executor clock ratelimit breaker budget gc health lifecycle slurm_sync \
	       slurm_tenant \
	       scenarios api objects
tsan:
	$(MAKE) TSAN=1 $(TSAN_SUITES:%=build-tsan/tests/test_%)
	@TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
		scripts/run-unit.sh $(TSAN_SUITES:%=build-tsan/tests/test_%)

# For editors (clangd): every compile command of a clean build, recorded by bear.
compile_commands.json: $(SRC_ALL) $(UNIT_SRC)
	rm -rf build-cc && bear --output $@ -- $(MAKE) BUILD=build-cc BIN=build-cc/fleetplane \
		build-cc/fleetplane $(UNIT_BIN:$(BUILD)/%=build-cc/%) && rm -rf build-cc

san:
	$(MAKE) SAN=1 unit
	$(MAKE) SAN=1 peers
	$(MAKE) SAN=1 integration

# fleetplane sim as a test tier of its own (docs/simulation.md): SEEDS seeds from FIRST on a small
# world with every fault profile, stopping at the first that violates an invariant, then the
# injected-bug check. `make simtest SEEDS=10000` runs long; CI's share is tests/integration/test_sim.sh.
SEEDS ?= 1000
FIRST ?= 1
.PHONY: simtest
simtest: $(BIN)
	@tests/sim/simtest.sh ./$(BIN) $(SEEDS) $(FIRST)
	@tests/sim/test_sim_bug.sh ./$(BIN)

FUZZ_SECONDS ?= 15
fuzz:
	tests/fuzz/run.sh $(FUZZ_SECONDS)

# Everything CI runs: style and include rules first, the normal suite, the slow tier (real VMs;
# CI runs as root), the threaded suites under TSan, the whole suite again under ASan+UBSan, the
# fuzzers.
check: style check-layers
	$(MAKE) test
	$(MAKE) slow
	$(MAKE) ops
	$(MAKE) tsan
	$(MAKE) san
	$(MAKE) fuzz

clean:
	rm -rf build build-san build-tsan build-fuzz fleetplane fleetplane-san fleetplane-tsan

-include $(OBJ_ALL:.o=.d) $(UNIT_BIN:=.d) $(BUILD)/tests/support/filter.d $(BUILD)/tests/support/harness.d
