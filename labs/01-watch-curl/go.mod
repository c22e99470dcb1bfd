module github.com/listwatch-labs/listwatch-labs/labs/01-watch-curl

go 1.26.0

require (
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	k8s.io/client-go v0.36.3 // indirect
)
