# phux shell integration for zsh: OSC 133 prompt/command marks, OSC 7 cwd.
# Loaded by .zshenv (next to this file) before the user's .zshrc; the hooks
# go into precmd_functions/preexec_functions beside the user's own, and at
# every prompt they make sure they are still there, first and last.
#
# Bytes (spec/shell-integration.md): before each prompt `133;D;<status>` when a
# command ran, `7;file://host/cwd`; PS1 is wrapped in `133;A` .. `133;B`, PS2
# in `133;A;k=s` .. `133;B`; preexec prints `133;C;cmdline_url=<command>`.

[[ -n ${_phux_loaded-} ]] && return 0
typeset -g _phux_loaded=1 _phux_ran= _phux_cwd= _phux_cwd_url= _phux_url=
typeset -g _phux_k=${_phux_k-}
typeset -g _phux_a=$'%{\e]133;A;phux_k='$_phux_k$'\a%}' _phux_a2=$'%{\e]133;A;k=s;phux_k='$_phux_k$'\a%}'
typeset -g _phux_b=$'%{\e]133;B;phux_k='$_phux_k$'\a%}'

# Percent-encode $1 into _phux_url, keeping RFC 3986 unreserved bytes and the
# characters in $2 (a bracket expression body, e.g. "/" for paths).
_phux_urlencode() {
    emulate -L zsh -o no_multibyte
    local LC_ALL=C s=$1 out= c
    if [[ $s != *[^A-Za-z0-9._~$2-]* ]]; then
        _phux_url=$s
        return
    fi
    for c in ${(s::)s}; do
        if [[ $c == [A-Za-z0-9._~$2-] ]]; then
            out+=$c
        else
            builtin printf -v c '%%%02X' "'$c"
            out+=$c
        fi
    done
    _phux_url=$out
}

# First in precmd_functions: the finished command's status (zsh gives every
# hook the same $?), then the cwd.
_phux_precmd() {
    local ret=$?
    emulate -L zsh
    if [[ -n $_phux_ran ]]; then
        builtin printf '\e]133;D;%s;phux_k=%s\a' $ret $_phux_k
        _phux_ran=
    fi
    if [[ $PWD != $_phux_cwd ]]; then
        _phux_urlencode $PWD /
        _phux_cwd=$PWD
        _phux_cwd_url=$_phux_url
    fi
    builtin printf '\e]7;file://%s%s\a' $HOST $_phux_cwd_url
    return ret
}

# Last in precmd_functions: after the user's hooks and themes built this
# prompt, wrap it again if needed and keep our hooks first and last.
_phux_precmd_last() {
    local ret=$?
    emulate -L zsh
    if [[ $PS1 != ${~:-"${(b)_phux_a}*${(b)_phux_b}"} ]]; then
        PS1=$_phux_a${PS1#$_phux_a}
        PS1=${PS1%$_phux_b}$_phux_b
    fi
    if [[ $PS2 != ${~:-"${(b)_phux_a2}*${(b)_phux_b}"} ]]; then
        PS2=$_phux_a2${PS2#$_phux_a2}
        PS2=${PS2%$_phux_b}$_phux_b
    fi
    if [[ ${precmd_functions[1]-} != _phux_precmd || ${precmd_functions[-1]-} != _phux_precmd_last ]]; then
        precmd_functions=(_phux_precmd ${precmd_functions:#_phux_precmd(|_last)} _phux_precmd_last)
    fi
    if [[ ${preexec_functions[-1]-} != _phux_preexec ]]; then
        preexec_functions=(${preexec_functions:#_phux_preexec} _phux_preexec)
    fi
    return ret
}

# Last in preexec_functions: $1 is the command line as typed.
_phux_preexec() {
    emulate -L zsh
    # precmd_functions replaced: put the hooks back, so that a D follows this C.
    _phux_ensure_hooks
    # zle cannot be hooked from a startup file (it is not up yet), nor at the first
    # prompt without delaying it; a widget defined later (Debian's zshrc defines
    # zle-line-finish) replaces the hook dispatcher, which wraps it when added again.
    if [[ ${widgets[zle-line-finish]-} != *azhw:* ]]; then
        builtin autoload -Uz add-zle-hook-widget && add-zle-hook-widget line-finish _phux_line_finish
    fi
    _phux_ran=1
    _phux_urlencode $1 ''
    builtin printf '\e]133;C;cmdline_url=%s;phux_k=%s\a' $_phux_url $_phux_k
}

# The hooks put back where they are gone (`precmd_functions=()` typed or in a
# .zshrc sourced again), without moving the user's.
_phux_ensure_hooks() {
    if (( ! ${precmd_functions[(I)_phux_precmd]} || ! ${precmd_functions[(I)_phux_precmd_last]} )); then
        precmd_functions=(_phux_precmd ${precmd_functions:#_phux_precmd(|_last)} _phux_precmd_last)
    fi
    if (( ! ${preexec_functions[(I)_phux_preexec]} )); then
        preexec_functions+=(_phux_preexec)
    fi
}

# Each hook puts the others back: precmd and preexec each other, and a zle hook
# that runs when Enter accepts a line both, before preexec runs. So replacing
# both arrays (or either) loses the marks of that one command at most.
_phux_line_finish() {
    emulate -L zsh
    _phux_ensure_hooks
}

typeset -ga precmd_functions preexec_functions
precmd_functions=(_phux_precmd $precmd_functions _phux_precmd_last)
preexec_functions+=(_phux_preexec)

# After each of the user's startup files (.zshenv ours, .zprofile, .zshrc,
# .zlogin: see .zshenv): keep the hooks first and last, after whatever a theme
# added, so that the first prompt is marked too; point ZDOTDIR back here while
# zsh has more startup files to read, and leave it as the user has it after the
# last one.
_phux_after_startup_file() {
    if [[ -n ${ZDOTDIR+x} && $ZDOTDIR != ${_phux_dir-} ]]; then
        _phux_zdotdir=$ZDOTDIR _phux_zdotdir_set=1
    fi
    precmd_functions=(_phux_precmd ${precmd_functions:#_phux_precmd(|_last)} _phux_precmd_last)
    preexec_functions=(${preexec_functions:#_phux_preexec} _phux_preexec)
    if [[ $1 == .zlogin || ( $1 == .zshrc && ! -o login ) || ! -o rcs ]]; then
        unset _phux_zdotdir _phux_zdotdir_set _phux_dir
        unfunction _phux_after_startup_file
    else
        ZDOTDIR=${_phux_dir-$ZDOTDIR}
    fi
}
