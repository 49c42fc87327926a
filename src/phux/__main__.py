from phux.cli.main import main

main()
