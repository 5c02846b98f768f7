module github.com/stepstat/stepstat

go 1.26.8

require (
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/spf13/pflag v1.1.0
)
