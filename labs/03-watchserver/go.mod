module github.com/listwatch-labs/listwatch-labs/labs/03-watchserver

go 1.26.0
