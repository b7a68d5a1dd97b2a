module github.com/flinksql/flinksql

go 1.26.8

require (
	github.com/chzyer/readline v1.5.1
	github.com/cockroachdb/datadriven v1.0.3
)

require (
	github.com/pmezard/go-difflib v1.0.0 // indirect
	golang.org/x/sys v0.0.0-20220310020820-b874c991c1a5 // indirect
)
