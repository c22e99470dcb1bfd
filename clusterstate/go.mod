module github.com/listwatch-labs/listwatch-labs/clusterstate

go 1.26.0
