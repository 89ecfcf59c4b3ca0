module gradwire.dev/gradwire

go 1.19
