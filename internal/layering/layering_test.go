package layering

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/flinksql/flinksql/"

// rule forbids packages under from (a path prefix) to import, directly or
// not, any package under one of the prefixes of mustNot.
type rule struct {
	from    string
	mustNot []string
	why     string
}

var rules = []rule{
	{"types", []string{""}, "the row types are the bottom of the house: everything imports them"},
	{"units", []string{""}, "value syntax shared by every layer imports nothing of the module"},
	{"state", []string{"exec", "checkpoint", "sql/", "plan", "connectors", "jobs", "session", "shell"},
		"the runtime is built over the state backends, not the reverse"},
	{"exec", []string{"sql/", "plan", "connectors", "formats", "checkpoint", "jobs", "session", "shell", "broker", "options"},
		"the runtime knows no SQL and no connector: it is driven through narrow interfaces"},
	{"checkpoint", []string{"sql/", "plan", "connectors", "formats", "jobs", "session", "shell"},
		"checkpoint storage serves the runtime only"},
	{"connectors", []string{"plan", "sql/parser", "jobs", "session", "shell", "checkpoint"},
		"connectors are below the planner and the session"},
	{"formats", []string{"exec", "connectors", "plan", "jobs", "session", "shell"},
		"formats encode rows and know nothing of the runtime"},
	{"sql/", []string{"plan", "exec", "state", "connectors", "checkpoint", "jobs", "session", "shell"},
		"parser, catalog and expressions are below the planner"},
	{"plan", []string{"jobs", "session", "shell", "checkpoint"},
		"the planner compiles SQL into a job graph; running it is the supervisor's business"},
	{"options", []string{"session", "shell", "exec", "state", "sql/", "plan", "jobs"},
		"the option registry is read by the session and the job supervision"},
	{"jobs", []string{"session", "shell", "cmd"}, "job supervision is below the session that submits jobs"},
	{"session", []string{"shell", "cmd"}, "the session is below the shell and the process"},
	{"monitor", []string{"session", "shell", "cmd"}, "the REST API, dashboard and metrics read jobs through the supervisor, not the session"},
}

// directRules are rules on direct imports only.
var directRules = []rule{
	{"session", []string{"exec/groupagg", "exec/window", "exec/rank"}, "operators are the planner's business; the session passes it configuration of its own types"},
}

// deps returns every package of the module with its imports inside the
// module (paths relative to the module): direct ones, or all transitive
// ones.
func deps(t *testing.T, direct bool) map[string][]string {
	t.Helper()
	format := `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`
	if direct {
		format = `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`
	}
	cmd := exec.Command("go", "list", "-f", format, "../../...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	m := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		var own []string
		for _, d := range f[1:] {
			if strings.HasPrefix(d, module) {
				own = append(own, strings.TrimPrefix(d, module))
			}
		}
		m[strings.TrimPrefix(f[0], module)] = own
	}
	return m
}

func under(pkg, prefix string) bool {
	if prefix == "" {
		return true
	}
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(pkg, prefix)
	}
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// TestLayering: no package imports a package of a higher layer.
func TestLayering(t *testing.T) {
	all, direct := deps(t, false), deps(t, true)
	if len(all) < 20 {
		t.Fatalf("go list found only %d packages of the module", len(all))
	}
	check := func(pkg string, r rule, imports []string) {
		if !under(pkg, r.from) {
			return
		}
		for _, d := range imports {
			for _, bad := range r.mustNot {
				if under(d, bad) {
					t.Errorf("%s imports %s: %s", pkg, d, r.why)
				}
			}
		}
	}
	for pkg, ds := range all {
		for _, r := range rules {
			check(pkg, r, ds)
		}
		for _, r := range directRules {
			check(pkg, r, direct[pkg])
		}
		if !under(pkg, "cmd") && pkg != "integration" && pkg != "bench" && pkg != "shell" {
			for _, d := range ds {
				if under(d, "shell") {
					t.Errorf("%s imports %s: only the process (cmd) uses the shell", pkg, d)
				}
			}
		}
	}
}

// TestNoEnvironmentBelowCmd: only the process reads environment variables;
// everything below gets its settings passed in (tests excepted).
func TestNoEnvironmentBelowCmd(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "cmd" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, call := range []string{"os.Getenv(", "os.LookupEnv(", "os.Environ("} {
			if bytes.Contains(src, []byte(call)) {
				t.Errorf("%s calls %s: read the environment in cmd/ and pass the setting in", rel, strings.TrimSuffix(call, "("))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
