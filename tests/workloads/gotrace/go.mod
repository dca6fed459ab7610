module gotrace

go 1.19
