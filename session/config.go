package session

import (
	"fmt"
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
	"execution.runtime-mode":              enumOption("streaming", "batch", "automatic"),
	"parallelism.default":                 intOption(1),
	"pipeline.max-parallelism":            intOption(1),
	"execution.buffer-timeout":            durationOption,
	"pipeline.auto-watermark-interval":    durationOption,
	"table.exec.source.idle-timeout":      durationOption,
	"table.local-time-zone":               func(v string) error { _, err := resolveZone(v); return err },
	"sql-client.execution.result-mode":    enumOption("table", "changelog", "tableau"),
	"sql-client.display.max-column-width": intOption(1),
	"table.exec.state.ttl":                durationOption,
	"table.exec.mini-batch.enabled":       enumOption("true", "false"),
	"table.exec.mini-batch.allow-latency": durationOption,
	"table.exec.mini-batch.size":          intOption(-1),
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
