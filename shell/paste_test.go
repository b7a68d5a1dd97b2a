package shell

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/chzyer/readline"
)

// countingWriter counts what the line editor writes to the terminal.
type countingWriter struct {
	mu sync.Mutex
	n  int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.n += len(p)
	w.mu.Unlock()
	return len(p), nil
}

func (w *countingWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// editorREPL runs the interactive loop on the real line editor, as if
// input were typed in a terminal 80 columns wide (the editor redraws as it
// does on a terminal), and returns what ran and how many bytes the editor
// wrote.
func editorREPL(t *testing.T, input string) ([]string, int) {
	t.Helper()
	paste := newPasteReader(strings.NewReader(input))
	term := &countingWriter{}
	rl, err := readline.NewEx(&readline.Config{
		Prompt:                 promptMain,
		DisableAutoSaveHistory: true,
		Stdin:                  readline.NewCancelableStdin(paste),
		Stdout:                 term,
		Stderr:                 term,
		FuncIsTerminal:         func() bool { return true },
		FuncMakeRaw:            func() error { return nil },
		FuncExitRaw:            func() error { return nil },
		FuncGetWidth:           func() int { return 80 },
		FuncOnWidthChanged:     func(func()) {},
		FuncFilterInputRune:    paste.filterRune,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	be := &fakeBackend{}
	var out, errOut syncBuffer
	r := &runner{be: be, out: &out, errOut: &errOut}
	r.makeInteractive(context.Background(), &errOut)
	if err := r.interactiveLoop(context.Background(), &readlineReader{rl: rl, paste: paste, echo: term}); err != nil {
		t.Fatal(err)
	}
	r.jobs.close()
	return be.texts(), term.count()
}

// Pasting a 20 KB statement on one line goes to the REPL in one piece: the
// editor's output is proportional to the paste (it used to redraw the
// whole line after every character: 20 000 redraws, about 200 MB).
func TestPasteLongLine(t *testing.T) {
	paste := func(terms int) int {
		stmt := "SELECT " + strings.Repeat("1 + ", terms) + "1 AS s"
		texts, written := editorREPL(t, pasteStart+stmt+";"+pasteEnd+"\r") // pasted, then Enter
		if len(texts) != 1 || texts[0] != stmt {
			t.Fatalf("ran %d statements, want the pasted one", len(texts))
		}
		if written > 8*len(stmt) {
			t.Fatalf("the editor wrote %d bytes for a %d-byte paste, want a few times the paste", written, len(stmt))
		}
		return written
	}
	small, large := paste(2500), paste(5000) // 10 KB and 20 KB
	t.Logf("the editor wrote %d bytes for a 10 KB paste, %d for 20 KB", small, large)
	if ratio := float64(large) / float64(small); ratio > 2.5 {
		t.Fatalf("the editor wrote %d bytes for 10 KB and %d for 20 KB: ratio %.2f, want about 2 (linear)", small, large, ratio)
	}
}

// A multi-line paste runs statement by statement as its lines complete
// them; its unfinished last line stays in the editor, continued by typing.
func TestPasteLines(t *testing.T) {
	input := "SET 'a' = 'b';\r" + pasteStart + "SELECT 1\r  + 2;\rSET 'c'\r  = 'd'; SELECT 'x;'\r" + pasteEnd + "AS y;\r"
	texts, _ := editorREPL(t, input)
	want := []string{"SET 'a' = 'b'", "SELECT 1\n  + 2", "SET 'c'\n  = 'd'", "SELECT 'x;'\nAS y"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("ran %q, want %q", texts, want)
	}
}

// Markers split across reads are still recognised; text outside pastes
// passes through unchanged.
func TestPasteReaderSplitMarkers(t *testing.T) {
	chunks := []string{"ab\x1b", "[20", "0~pas", "ted\r\x1b[20", "1~cd", "\x1b"}
	pr, pw := io.Pipe()
	go func() {
		for _, c := range chunks {
			pw.Write([]byte(c))
		}
		pw.Close()
	}()
	p := newPasteReader(pr)
	got, err := io.ReadAll(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ab\ncd\x1b"; string(got) != want {
		t.Fatalf("editor input %q, want %q", got, want)
	}
	if text, ok := p.take(); !ok || text != "pasted\r" {
		t.Fatalf("paste %q, %v; want %q", text, ok, "pasted\r")
	}
}
