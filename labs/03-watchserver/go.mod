module github.com/listwatch-labs/listwatch-labs/labs/03-watchserver

go 1.26.0

require (
	github.com/rogpeppe/go-internal v1.16.0
	go.uber.org/goleak v1.3.0
	golang.org/x/net v0.49.0
	gopkg.in/evanphx/json-patch.v4 v4.13.0
	k8s.io/api v0.36.3
	k8s.io/apimachinery v0.36.3
	k8s.io/apiserver v0.36.3
	k8s.io/client-go v0.36.3
)
