module github.com/listwatch-labs/listwatch-labs/learn

go 1.26.0

require golang.org/x/term v0.44.0
