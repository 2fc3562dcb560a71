// Package testsupport holds packages that serve tests only: they are never
// imported by the linkd binary. chtest starts a ClickHouse server (Debian's
// 18.16) or opens chDB (current ClickHouse in process) for a test; chdb is
// the clickhouse-go driver over libchdb.so that chtest uses. ports hands out
// ports for servers started in child processes. browser starts
// a headless Chromium (chromedp) for real-browser tests. A test in this
// package (deps_test.go) keeps them out of cmd/linkd.
package testsupport
