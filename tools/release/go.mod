module github.com/bulwark-iac/bulwark/tools/release

go 1.26.0

require golang.org/x/mod v0.43.0
