// Package shell owns flinksql's user-facing SQL client: the interactive REPL
// (readline prompt, multi-line statements, history, completion, Ctrl-C
// handling), batch execution of a script file (-f) or string (-e), and the
// rendering of statement results in the layout of Flink's SQL client
// ("tableau" result mode, [INFO]/[ERROR] messages).
//
// The package talks to a session through the narrow Executor interface and
// splits and parses statements with sql/parser. It never runs jobs itself:
// an INSERT or SELECT comes back from the session already running, and the
// shell only waits for it, renders it, or stops it.
//
// Behaviour that differs between the entry points:
//
//   - RunFile, RunString and RunREPL on piped input run a script: statements
//     run one after another, the first failing statement is reported on the
//     error writer and ends the run with a *StatementError, and an INSERT is
//     waited for until its (bounded) job finishes before the next statement
//     starts, because the job runs inside this process and would otherwise
//     die with it. Cancelling ctx (SIGINT/SIGTERM in the caller) stops the
//     running query or job cleanly, skips the remaining statements and
//     returns nil: a user stopping an unbounded job is a normal way to end a
//     streaming script.
//   - The interactive REPL submits an INSERT and returns to the prompt at
//     once (the job keeps running in the background, as with Flink's SQL
//     client; a later failure of the job is reported on the error writer),
//     unless 'table.dml-sync' is 'true'. Ctrl-C while a statement runs
//     cancels that statement only; a failing statement is reported and the
//     REPL goes on.
package shell
