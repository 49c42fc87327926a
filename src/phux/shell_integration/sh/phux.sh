# phux shell integration for POSIX sh (dash, and bash or others started as sh).
# The phux server starts an interactive sh with ENV naming this file. It puts
# ENV back, reads the user's own $ENV file if there was one, then wraps PS1 and
# PS2. A POSIX shell has no hook before a prompt or before a command, only
# prompt expansion, so (spec/shell-integration.md): every prompt starts with
# `133;D;$?` and `7;file://host/cwd`; PS1 is wrapped in `133;A` .. `133;B`, PS2
# in `133;A;k=s` .. `133;B`; there is no C mark and no command line, and a PS1
# the user changes later is not wrapped again.

# The pane's key signs every mark (spec/shell-integration.md, "Signed marks"):
# kept in an unexported variable, so the user's files and commands never inherit it.
_phux_k=${_PHUX_KEY-${_phux_k-}}
unset _PHUX_KEY
# Announce the integration before the user's $ENV file runs: a client then waits
# for the first prompt instead of guessing from quiet time.
case $- in
*i*) [ -n "$_phux_k" ] && printf '\033]133;I;start;phux_k=%s\007' "$_phux_k" ;;
esac

if [ -n "${_PHUX_ENV+x}" ]; then
    ENV=$_PHUX_ENV
    export ENV
    unset _PHUX_ENV
    # POSIX shells subject ENV to parameter expansion before reading it.
    eval "_phux_f=\"$ENV\""
    if [ -r "$_phux_f" ]; then
        . "$_phux_f"
    fi
    unset _phux_f
else
    unset ENV
fi

case $- in
*i*)
    if [ "${PHUX_SHELL_INTEGRATION-}" != 0 ] && [ -z "${_phux_loaded-}" ]; then
        _phux_loaded=1
        _phux_e=$(printf '\033\007')
        _phux_bel=${_phux_e#?}
        _phux_esc=${_phux_e%?}
        unset _phux_e
        _phux_host=${HOSTNAME:-$(uname -n)}
        # bash as sh counts prompt width itself; \[ \] keep the marks out of it.
        _phux_o= _phux_c=
        if [ -n "${BASH_VERSION-}" ]; then
            _phux_o='\[' _phux_c='\]'
        fi

        # Runs in a subshell from PS1 expansion, given $? to exit with: dash
        # leaves $? alone after a command substitution in a prompt, but bash
        # (as sh) takes the substitution's status, which the user's PS1 sees.
        _phux_osc7() {
            case $PWD in
            *[!A-Za-z0-9/._~-]*)
                printf '%s]7;file://%s%s%s' "$_phux_esc" "$_phux_host" "$(
                    printf %s "$PWD" | LC_ALL=C awk -v RS='\001' '
                        BEGIN { for (i = 1; i < 256; i++) ord[sprintf("%c", i)] = i }
                        { for (i = 1; i <= length($0); i++) {
                            c = substr($0, i, 1)
                            if (c ~ /[A-Za-z0-9\/._~-]/) printf "%s", c
                            else printf "%%%02X", ord[c]
                        } }'
                )" "$_phux_bel"
                ;;
            *) printf '%s]7;file://%s%s%s' "$_phux_esc" "$_phux_host" "$PWD" "$_phux_bel" ;;
            esac
            return "$1"
        }

        _phux_s=";phux_k=$_phux_k$_phux_bel"
        PS1="$_phux_o$_phux_esc]133;D;\$?$_phux_s\$(_phux_osc7 \$?)$_phux_esc]133;A$_phux_s$_phux_c${PS1-}$_phux_o$_phux_esc]133;B$_phux_s$_phux_c"
        PS2="$_phux_o$_phux_esc]133;A;k=s$_phux_s$_phux_c${PS2-> }$_phux_o$_phux_esc]133;B$_phux_s$_phux_c"
        unset _phux_s
    elif [ -z "${_phux_loaded-}" ] && [ -n "$_phux_k" ]; then
        # A user file turned the integration off: no prompt marks will come.
        printf '\033]133;I;off;phux_k=%s\007' "$_phux_k"
    fi
    ;;
esac
