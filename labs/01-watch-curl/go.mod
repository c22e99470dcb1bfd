module github.com/listwatch-labs/listwatch-labs/labs/01-watch-curl

go 1.26.0
