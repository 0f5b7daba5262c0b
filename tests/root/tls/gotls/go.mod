module gotls

go 1.19
