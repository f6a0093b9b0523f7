module spangle/client

go 1.26.8
