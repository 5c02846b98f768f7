module github.com/stepstat/stepstat

go 1.26.8

require (
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/spf13/pflag v1.1.0
	golang.org/x/term v0.48.0
)

require (
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/go-echarts/go-echarts/v2 v2.6.7
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
)

require (
	golang.org/x/sync v0.25.0
	golang.org/x/tools v0.52.0
)

require golang.org/x/sys v0.50.0 // indirect
