package parser

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeConstructsParse keeps the README's table of catalog statements
// and functions true: every example in it must parse.
func TestReadmeConstructsParse(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "### Catalog statements, functions and set operations: what runs")
	if start < 0 {
		t.Fatal("README.md has no section \"Catalog statements, functions and set operations: what runs\"")
	}
	section := text[start:]
	if end := strings.Index(section[4:], "\n#"); end >= 0 {
		section = section[:end+4]
	}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[3]), "`") {
			continue
		}
		status := strings.TrimSpace(cells[2])
		if status != "yes" && status != "refused" {
			t.Errorf("README row %q: status %q is neither yes nor refused", strings.TrimSpace(cells[1]), status)
		}
		example := strings.Trim(strings.TrimSpace(cells[3]), "`")
		rows++
		if _, err := ParseStatement(example); err != nil {
			t.Errorf("README example for %q does not parse: %s\n%v", strings.TrimSpace(cells[1]), example, err)
		}
	}
	if rows < 20 {
		t.Errorf("found %d examples in the README table, expected at least 20", rows)
	}
}
