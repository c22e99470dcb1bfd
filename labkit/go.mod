module github.com/listwatch-labs/listwatch-labs/labkit

go 1.26.0
