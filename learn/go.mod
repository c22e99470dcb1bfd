module github.com/listwatch-labs/listwatch-labs/learn

go 1.26.0
