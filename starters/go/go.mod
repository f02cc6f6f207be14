module bigtwo-starter

go 1.19
