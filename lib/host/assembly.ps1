# svc worker, part of lib/host.ps1 (dot-sourced by it): the compiled half of the host (lib/host/cs),
# the per-call path that costs too much as script. Compiling takes about a second, so the assembly
# is kept in svc's cache directory under a name derived from its sources and the engine build, and
# every later process start only loads it (about 10 ms).

# The digest of the sources: SHA-256 over each file's name, a newline, its text and a newline, in
# ordinal order, as 32 lowercase hex digits. svc computes the same (hostSourceDigest in
# lib/host_files.ts) once and passes it, which saves each start reading and hashing the sources.
function Get-SourceDigest([string[]]$Sources) {
    $sha = [System.Security.Cryptography.SHA256]::Create()
    try {
        $text = [System.Text.StringBuilder]::new()
        foreach ($source in $Sources) {
            $null = $text.Append([System.IO.Path]::GetFileName($source)).Append("`n").Append([System.IO.File]::ReadAllText($source)).Append("`n")
        }
        $digest = $sha.ComputeHash([System.Text.Encoding]::UTF8.GetBytes($text.ToString()))
        return [System.Convert]::ToHexString($digest, 0, 16).ToLowerInvariant()
    } finally {
        $sha.Dispose()
    }
}

# The file the assembly is kept in: the digest of the sources ($SourceDigest when it has the form
# svc gives, else computed here) and the engine build it was compiled for (the module version id of
# System.Management.Automation), so an upgrade of either compiles anew.
function Get-HostAssemblyName([string[]]$Sources, [string]$SourceDigest) {
    if ($SourceDigest -cnotmatch '^[0-9a-f]{32}$') { $SourceDigest = Get-SourceDigest $Sources }
    return 'svc-host-' + $SourceDigest + '-' + [psobject].Assembly.ManifestModule.ModuleVersionId.ToString('N') + '.dll'
}

# Compiles the sources to $Path, or into memory (and loads them) when $Path is empty.
function Invoke-HostCompiler([string[]]$Sources, [string]$Path) {
    # With -ReferencedAssemblies, Add-Type references only what it is given (and System.Runtime), so
    # the framework's reference assemblies and the engine are listed with the one extra (JsonObject).
    $references = [System.Collections.Generic.List[string]]::new([System.IO.Directory]::GetFiles([System.IO.Path]::Combine($PSHOME, 'ref'), '*.dll'))
    $references.Add([psobject].Assembly.Location)
    $references.Add([System.IO.Path]::Combine($PSHOME, 'Microsoft.PowerShell.Commands.Utility.dll'))
    $references.Add([System.IO.Path]::Combine($PSHOME, 'Newtonsoft.Json.dll'))
    $arguments = @{ Path = $Sources; ReferencedAssemblies = $references.ToArray(); CompilerOptions = '-optimize+' }
    if ($Path) { $arguments['OutputAssembly'] = $Path }
    Microsoft.PowerShell.Utility\Add-Type @arguments
}

# True when a user other than this one may write $Path (Unix group or other write bit): code is
# not loaded from such a place.
function Test-WritableByOthers([string]$Path) {
    if ($IsWindows) { return $false }
    $mode = [System.IO.File]::GetUnixFileMode($Path)
    return ($mode -band [System.IO.UnixFileMode]'GroupWrite, OtherWrite') -ne 0
}

# Compiles the sources into the cache as $Name, through a directory of this process's own and a
# rename, so processes starting together never load a half-written file.
function Save-HostAssembly([string[]]$Sources, [string]$CacheDirectory, [string]$Name) {
    # Only this user may write where code is loaded from.
    if ($IsWindows) {
        $null = [System.IO.Directory]::CreateDirectory($CacheDirectory)
    } else {
        $null = [System.IO.Directory]::CreateDirectory($CacheDirectory, [System.IO.UnixFileMode]'UserRead, UserWrite, UserExecute')
    }
    if (Test-WritableByOthers $CacheDirectory) { throw 'other users can write there.' }
    $staging = [System.IO.Path]::Combine($CacheDirectory, "tmp-$PID-" + [guid]::NewGuid().ToString('N'))
    try {
        $null = [System.IO.Directory]::CreateDirectory($staging)
        Invoke-HostCompiler $Sources ([System.IO.Path]::Combine($staging, $Name))
        # Another process may have put it there first; either copy will do.
        try { [System.IO.File]::Move([System.IO.Path]::Combine($staging, $Name), [System.IO.Path]::Combine($CacheDirectory, $Name)) } catch { $null = $_ }
    } finally {
        try { [System.IO.Directory]::Delete($staging, $true) } catch { $null = $_ }
    }
}

# Loads the compiled half: from the cache when it holds this build, else compiled into it first.
# A cache that cannot be written, that other users can write, or whose file does not load leaves
# the host compiling into memory at every start instead (said on stderr).
function Import-HostAssembly([string]$HostDirectory, [string]$CacheDirectory, [string]$SourceDigest) {
    $sources = [System.IO.Directory]::GetFiles([System.IO.Path]::Combine($HostDirectory, 'cs'), '*.cs')
    [System.Array]::Sort($sources, [System.StringComparer]::Ordinal)
    if ($CacheDirectory) {
        $name = Get-HostAssemblyName $sources $SourceDigest
        $path = [System.IO.Path]::Combine($CacheDirectory, $name)
        try {
            if (-not [System.IO.File]::Exists($path)) { Save-HostAssembly $sources $CacheDirectory $name }
            if ((Test-WritableByOthers $CacheDirectory) -or (Test-WritableByOthers $path)) { throw 'other users can write there.' }
            $null = [System.Reflection.Assembly]::LoadFrom($path)
            return
        } catch {
            Write-Diag "the compiled host is not kept in '$CacheDirectory', so it is compiled at every start: $((Get-InnerException $_.Exception).Message)"
        }
    }
    Invoke-HostCompiler $sources ''
}
