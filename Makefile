# fleetplane build. `make` builds ./fleetplane; `make test` runs unit and integration tests.
# SAN=1 builds with ASan+UBSan into build-san/ (binary ./fleetplane-san).
CC      ?= cc
PKGS    := libmicrohttpd jansson sqlite3 libcurl libsodium libfreeipmi libxml-2.0
SAN     ?= 0
ifeq ($(SAN),1)
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
CFLAGS  += -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
           -pthread -Isrc $(SANFLAGS) $(shell pkg-config --cflags $(PKGS))
LDLIBS  += $(shell pkg-config --libs $(PKGS)) -lpthread -lm -ldl
LDFLAGS += $(SANFLAGS) -pthread

LAYERS  := base core store driver engine controller api agent sim fleet cmd
SRC_ALL := $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c))
OBJ_ALL := $(patsubst src/%.c,$(BUILD)/%.o,$(SRC_ALL)) $(BUILD)/main.o
LIB_OBJ = $(patsubst src/%.c,$(BUILD)/%.o,$(foreach l,$(1),$(wildcard src/$(l)/*.c)))

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))

.PHONY: all clean test unit integration san fuzz bench check check-banned
all: $(BIN)

$(BIN): $(OBJ_ALL)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# A unit test names the layers it links on its first line: /* layers: base core store */
test_layers = $(shell sed -n '1s|^/\* layers: \(.*\) \*/|\1|p' $(1))
define UNIT_RULE
$(BUILD)/tests/$(basename $(notdir $(1))): $(1) $(call LIB_OBJ,$(call test_layers,$(1)))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -MMD -MP -MF $$@.d -o $$@ $$< $$(filter %.o,$$^) -lcmocka $$(LDLIBS)
endef
$(foreach t,$(UNIT_SRC),$(eval $(call UNIT_RULE,$(t))))

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

integration: $(BIN)
	@FLEETPLANE_BIN=$(CURDIR)/$(BIN) FP_SAN=$(SAN) tests/integration/run.sh

# Unit then integration, one after the other (parallel builds inside each, not parallel runs).
test: check-banned
	$(MAKE) unit
	$(MAKE) integration

# Banned functions (base/banned.h lists why), caught even where the header is not included.
check-banned:
	@! grep -nE '\b(strcpy|strcat|sprintf|vsprintf|strtok|atoi|gmtime|localtime)\s*\(' \
		$$(find src tests -name '*.c' -o -name '*.h' | grep -v base/banned.h) \
		| grep -vE 'snprintf|vsnprintf|strtok_r|gmtime_r|localtime_r|BANNED' \
		|| { echo "banned function used (see src/base/banned.h)"; exit 1; }

san:
	$(MAKE) SAN=1 unit
	$(MAKE) SAN=1 integration

FUZZ_SECONDS ?= 30
fuzz:
	tests/fuzz/run.sh $(FUZZ_SECONDS)

# Everything CI runs: the normal suite, the whole suite again under ASan+UBSan, the fuzzers.
check: test
	$(MAKE) san
	$(MAKE) fuzz

clean:
	rm -rf build build-san build-fuzz fleetplane fleetplane-san

-include $(OBJ_ALL:.o=.d) $(UNIT_BIN:=.d)
