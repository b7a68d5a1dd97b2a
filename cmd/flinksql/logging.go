package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// The log: job notices, completed checkpoints, warnings (log/slog). In the
// interactive shell it goes to a file, log.file or by default
// $XDG_STATE_HOME/flinksql/flinksql.log (~/.local/state/flinksql/…), so
// that the prompt shows only results, errors and short job status
// notices; errors are shown there too. With -f or -e every line goes to
// stderr as it is (scripts read it: "Completed checkpoint 3 for job …"),
// and to log.file as well when it is set.

// defaultLogFile is the interactive shell's log file.
func defaultLogFile() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "flinksql.log" // the working directory
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "flinksql", "flinksql.log")
}

// openLog builds the log; closeLog closes its file.
func openLog(file string, interactive bool, stderr io.Writer) (logger *slog.Logger, path string, closeLog func(), err error) {
	var hs []slog.Handler
	closeLog = func() {}
	if file == "" && interactive {
		file = defaultLogFile()
	}
	if file != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return nil, "", nil, fmt.Errorf("log.file: %w", err)
		}
		f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, "", nil, fmt.Errorf("log.file: %w", err)
		}
		closeLog = func() { _ = f.Close() }
		hs = append(hs, slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	min := slog.LevelInfo
	if interactive {
		min = slog.LevelError
	}
	hs = append(hs, &plainHandler{w: stderr, min: min, mu: &sync.Mutex{}})
	return slog.New(teeHandler(hs)), file, closeLog, nil
}

// plainHandler writes each record's message as a line, nothing else.
type plainHandler struct {
	w   io.Writer
	min slog.Level
	mu  *sync.Mutex
}

func (h *plainHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }
func (h *plainHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := fmt.Fprintln(h.w, r.Message)
	return err
}
func (h *plainHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *plainHandler) WithGroup(string) slog.Handler      { return h }

// teeHandler hands each record to every handler that wants it.
type teeHandler []slog.Handler

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	var first error
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(as)
	}
	return out
}

func (t teeHandler) WithGroup(name string) slog.Handler {
	out := make(teeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}
