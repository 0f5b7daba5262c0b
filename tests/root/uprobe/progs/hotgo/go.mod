module hotgo

go 1.19
