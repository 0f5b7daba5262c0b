module ollamashaped

go 1.19
