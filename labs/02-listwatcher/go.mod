module github.com/listwatch-labs/listwatch-labs/labs/02-listwatcher

go 1.26.0
