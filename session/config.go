package session

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flinksql/flinksql/connectors"
)

// defaults are the options a session starts with, under Flink's names and
// with Flink's defaults. SET may add any other key (Flink accepts unknown
// keys too); the ones below are validated when set.
var defaults = map[string]string{
	"execution.runtime-mode":              "streaming",
	"parallelism.default":                 "1",
	"pipeline.max-parallelism":            "128",
	"execution.buffer-timeout":            "100 ms",
	"pipeline.auto-watermark-interval":    "200 ms",
	"table.exec.source.idle-timeout":      "0 ms",
	"table.local-time-zone":               "default",
	"sql-client.execution.result-mode":    "tableau",
	"sql-client.display.max-column-width": "30",
	"table.exec.state.ttl":                "0 ms",
	"table.exec.mini-batch.enabled":       "false",
	"table.exec.mini-batch.allow-latency": "0 ms",
	"table.exec.mini-batch.size":          "-1",
	"table.exec.sink.not-null-enforcer":   "ERROR",

	// Checkpointing (off until an interval is set) and recovery.
	"execution.checkpointing.interval":                                 "",
	"execution.checkpointing.mode":                                     "EXACTLY_ONCE",
	"execution.checkpointing.timeout":                                  "10 min",
	"execution.checkpointing.min-pause":                                "0 ms",
	"execution.checkpointing.max-concurrent-checkpoints":               "1",
	"execution.checkpointing.tolerable-failed-checkpoints":             "0",
	"execution.checkpointing.incremental":                              "",
	"execution.checkpointing.externalized-checkpoint-retention":        "NO_EXTERNALIZED_CHECKPOINTS",
	"state.backend.type":                                               "hashmap",
	"taskmanager.memory.managed.size":                                  "512 mb",
	"state.backend.rocksdb.memory.managed":                             "true",
	"state.backend.rocksdb.memory.fixed-per-slot":                      "",
	"state.checkpoints.dir":                                            "",
	"state.checkpoints.num-retained":                                   "1",
	"execution.state-recovery.path":                                    "",
	"restart-strategy.type":                                            "",
	"restart-strategy.fixed-delay.attempts":                            "1",
	"restart-strategy.fixed-delay.delay":                               "1 s",
	"restart-strategy.exponential-delay.initial-backoff":               "1 s",
	"restart-strategy.exponential-delay.max-backoff":                   "1 min",
	"restart-strategy.exponential-delay.backoff-multiplier":            "1.5",
	"restart-strategy.exponential-delay.attempts-before-reset-backoff": "2147483647",
	"restart-strategy.exponential-delay.reset-backoff-threshold":       "1 h",
	"restart-strategy.exponential-delay.jitter-factor":                 "0.1",
}

// optionCheck validates a value of a known option.
type optionCheck func(v string) error

func intOption(min int) optionCheck {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < min {
			return fmt.Errorf("expected an integer >= %d", min)
		}
		return nil
	}
}

func durationOption(v string) error {
	_, err := connectors.ParseDuration(v)
	return err
}

func enumOption(allowed ...string) optionCheck {
	return func(v string) error {
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				return nil
			}
		}
		return fmt.Errorf("expected one of [%s]", strings.Join(allowed, ", "))
	}
}

var checks = map[string]optionCheck{
	"execution.runtime-mode":                                           enumOption("streaming", "batch", "automatic"),
	"parallelism.default":                                              intOption(1),
	"pipeline.max-parallelism":                                         intOption(1),
	"execution.buffer-timeout":                                         durationOption,
	"pipeline.auto-watermark-interval":                                 durationOption,
	"table.exec.source.idle-timeout":                                   durationOption,
	"table.local-time-zone":                                            func(v string) error { _, err := resolveZone(v); return err },
	"sql-client.execution.result-mode":                                 enumOption("table", "changelog", "tableau"),
	"sql-client.display.max-column-width":                              intOption(1),
	"table.exec.state.ttl":                                             durationOption,
	"table.exec.mini-batch.enabled":                                    enumOption("true", "false"),
	"table.exec.mini-batch.allow-latency":                              durationOption,
	"table.exec.mini-batch.size":                                       intOption(-1),
	"table.exec.sink.not-null-enforcer":                                enumOption("ERROR", "DROP"),
	"table.exec.emit.allow-lateness":                                   optionalDuration,
	"table.exec.emit.early-fire.enabled":                               enumOption("true", "false"),
	"table.exec.emit.early-fire.delay":                                 optionalDuration,
	"table.exec.emit.late-fire.enabled":                                enumOption("true", "false"),
	"table.exec.emit.late-fire.delay":                                  optionalDuration,
	"execution.checkpointing.interval":                                 optionalDuration,
	"execution.checkpointing.mode":                                     enumOption("EXACTLY_ONCE", "AT_LEAST_ONCE"),
	"execution.checkpointing.timeout":                                  durationOption,
	"execution.checkpointing.min-pause":                                durationOption,
	"execution.checkpointing.max-concurrent-checkpoints":               intOption(1),
	"execution.checkpointing.tolerable-failed-checkpoints":             intOption(0),
	"execution.checkpointing.incremental":                              optionalEnum("true", "false"),
	"execution.checkpointing.externalized-checkpoint-retention":        enumOption("RETAIN_ON_CANCELLATION", "DELETE_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS"),
	"state.backend.type":                                               enumOption("hashmap", "rocksdb", "pebble"),
	"taskmanager.memory.managed.size":                                  positiveMemory,
	"state.backend.rocksdb.memory.managed":                             enumOption("true", "false"),
	"state.backend.rocksdb.memory.fixed-per-slot":                      optionalPositiveMemory,
	"state.checkpoints.num-retained":                                   intOption(1),
	"restart-strategy.type":                                            optionalEnum("none", "disable", "off", "fixed-delay", "fixeddelay", "exponential-delay", "exponentialdelay"),
	"restart-strategy.fixed-delay.attempts":                            intOption(0),
	"restart-strategy.fixed-delay.delay":                               durationOption,
	"restart-strategy.exponential-delay.initial-backoff":               durationOption,
	"restart-strategy.exponential-delay.max-backoff":                   durationOption,
	"restart-strategy.exponential-delay.attempts-before-reset-backoff": intOption(1),
	"restart-strategy.exponential-delay.reset-backoff-threshold":       durationOption,
	"restart-strategy.exponential-delay.backoff-multiplier":            floatOption(1, math.Inf(1)),
	"restart-strategy.exponential-delay.jitter-factor":                 floatOption(0, 1),
}

// floatOption accepts a number within [min, max].
func floatOption(min, max float64) optionCheck {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || f < min || f > max {
			if math.IsInf(max, 1) {
				return fmt.Errorf("expected a number >= %g", min)
			}
			return fmt.Errorf("expected a number between %g and %g", min, max)
		}
		return nil
	}
}

// positiveMemory accepts a memory size above zero: the managed memory is
// what rocksdb keyed state lives in (exec.KeyedStateConfig would read 0 as
// its default, so 0 would be accepted and ignored).
func positiveMemory(v string) error {
	n, err := connectors.ParseMemorySize(v)
	if err == nil && n == 0 {
		err = errors.New("the memory must be more than 0 bytes: it holds the rocksdb state backend's caches")
	}
	return err
}

// optionalPositiveMemory accepts an empty value (unset) or a memory size
// above zero.
func optionalPositiveMemory(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	return positiveMemory(v)
}

// memory returns a memory-size option (validated when set); 0 when unset.
func (c *config) memory(key string) int64 {
	n, _ := connectors.ParseMemorySize(c.get(key))
	return n
}

// optionalDuration accepts an empty value (unset) or a duration.
func optionalDuration(v string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	return durationOption(v)
}

func optionalEnum(allowed ...string) optionCheck {
	check := enumOption(allowed...)
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		return check(v)
	}
}

func checkOption(key, value string) error {
	if c, ok := checks[key]; ok {
		if err := c(value); err != nil {
			return fmt.Errorf("Could not parse value '%s' for key '%s': %v.", value, key, err)
		}
	}
	return nil
}

// resolveZone resolves table.local-time-zone: 'default' is the machine's zone.
func resolveZone(v string) (*time.Location, error) {
	if v == "" || strings.EqualFold(v, "default") {
		return time.Local, nil
	}
	if loc, err := time.LoadLocation(v); err == nil && !strings.EqualFold(v, "local") {
		return loc, nil
	}
	// GMT+08:00 style custom zone ids.
	if s, ok := strings.CutPrefix(v, "GMT"); ok && len(s) == 6 && (s[0] == '+' || s[0] == '-') && s[3] == ':' {
		h, e1 := strconv.Atoi(s[1:3])
		m, e2 := strconv.Atoi(s[4:6])
		if e1 == nil && e2 == nil && h <= 18 && m < 60 {
			off := h*3600 + m*60
			if s[0] == '-' {
				off = -off
			}
			return time.FixedZone(v, off), nil
		}
	}
	return nil, fmt.Errorf("the supported Zone ID is either a full name such as 'America/Los_Angeles', or a custom timezone id such as 'GMT-08:00', but configured Zone ID is '%s'", v)
}

// config is a session's option values.
type config struct {
	set map[string]string
}

// aliases maps deprecated option keys to the ones flinksql reads.
var aliases = map[string]string{
	"execution.savepoint.path":    "execution.state-recovery.path",
	"state.backend":               "state.backend.type",
	"execution.checkpointing.dir": "state.checkpoints.dir",
}

func canonicalKey(key string) string {
	if k, ok := aliases[key]; ok {
		return k
	}
	return key
}

func (c *config) get(key string) string {
	if v, ok := c.set[key]; ok {
		return v
	}
	return defaults[key]
}

func (c *config) intValue(key string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(c.get(key)))
	return n
}

func (c *config) duration(key string) time.Duration {
	d, _ := connectors.ParseDuration(c.get(key))
	return d
}

// list returns every option with a value, sorted by key.
func (c *config) list() [][]string {
	keys := map[string]bool{}
	for k := range defaults {
		keys[k] = true
	}
	for k := range c.set {
		keys[k] = true
	}
	var rows [][]string
	for k := range keys {
		rows = append(rows, []string{k, c.get(k)})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	return rows
}
