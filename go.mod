module github.com/stepstat/stepstat

go 1.26.8

require (
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/spf13/pflag v1.1.0
	golang.org/x/term v0.48.0
)

require (
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/tools v0.52.0
)
