module github.com/bulwark-iac/bulwark/cmd/bulwark

go 1.26.0

require (
	github.com/bulwark-iac/bulwark/core v0.0.0
	github.com/bulwark-iac/bulwark/sdk v0.0.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/term v0.38.0 // indirect
)

replace github.com/bulwark-iac/bulwark/sdk => ../../sdk

replace github.com/bulwark-iac/bulwark/core => ../../core
