// Package parser owns the SQL front end of flinksql: it turns Flink 1.20 SQL
// text (DDL, DML, queries and SQL-client commands) into an abstract syntax
// tree.
//
// The package contains a hand-written lexer, a recursive-descent statement
// and query parser, a precedence-climbing (Pratt) expression parser, the AST
// node types (ast.go), printers that turn expressions, data types and queries
// back into canonical Flink SQL text (FormatExpr, FormatDataType,
// FormatQuery), and helpers that split a script into statements
// (ParseScript, SplitStatements).
//
// The grammar follows Flink's default (Calcite-based) dialect: keywords are
// case-insensitive, identifiers keep their case, back-quoted identifiers may
// contain any character, and reserved words must be back-quoted to be used
// as names. Errors are reported as *Error values carrying the line and
// column of the offending token together with the tokens that would have
// been accepted there.
//
// The parser never panics: recursion is bounded (see MaxDepth) and all input
// is treated as untrusted.
package parser
