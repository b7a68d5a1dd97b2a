// Package shell owns flinksql's user-facing SQL client: the interactive REPL
// (readline prompt, multi-line statements, history, completion, Ctrl-C
// handling), batch execution of a script file (-f) or string (-e), and the
// rendering of statement results in the layout of Flink's SQL client
// ([INFO]/[ERROR] messages, and the result modes of
// 'sql-client.execution.result-mode').
//
// Result modes, read from the session for every SELECT:
//
//   - 'tableau' (flinksql's default; Flink's SQL client defaults to 'table')
//     prints every change as it arrives with its op column (+I, -U, +U, -D)
//     and ends with "Received a total of N rows"; when the query runs in
//     batch mode ('batch', or 'automatic' over bounded sources) it prints
//     the collected rows at the end instead, without op column.
//   - 'changelog' lists every change with its op column. In an interactive
//     terminal it is a scrolling listing in the streaming layout (always with
//     the op column, also in batch runtime mode), where Flink opens a
//     full-screen paged view; elsewhere it prints exactly as 'tableau' does.
//   - 'table' materializes the result: +I and +U add a row, -U and -D remove
//     one equal row. A retraction of a row that is not in the result is
//     reported on the error writer (in a terminal, once the live view has
//     closed) and skipped. Rows keep the order in
//     which they were first inserted; a +U that directly follows a -U takes
//     the retracted row's place (Flink's table view appends it at the end).
//     Non-interactive runs print only the final table, in the static layout
//     of batch results ("N rows in set" or "Empty set"), when the query ends
//     or is cancelled. In an interactive terminal the last rows that fit are
//     shown on the alternate screen, redrawn at most every 200 ms, with the
//     row count; when the query ends or Ctrl-C stops it, the normal screen
//     returns and the final table is printed once in the static layout.
//     Flink's view stays open, paged, until the user presses Q; ours closes
//     by itself. A stopped query's table is followed by
//     "[INFO] Result retrieval cancelled.", Flink's message when a result
//     view is left.
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
//     REPL goes on. Those jobs live in this process: QUIT;, EXIT; or
//     Ctrl-D with some still running lists them and asks before stopping
//     them; SIGTERM stops them without asking. Either way they are
//     stopped cleanly (session.Job.StopClean: a final checkpoint commits
//     their output), never cancelled silently. Pasted text is taken in
//     bracketed-paste mode, in one piece, because the line editor redraws
//     the whole line after every character it is given.
//
// A job stopped by a signal in a script is likewise stopped cleanly.
package shell
