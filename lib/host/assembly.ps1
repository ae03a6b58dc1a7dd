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

# What the sources are compiled against: the framework's reference assemblies, the engine, and the
# one extra (JsonObject).
function Get-HostReferences {
    $references = [System.Collections.Generic.List[string]]::new([System.IO.Directory]::GetFiles([System.IO.Path]::Combine($PSHOME, 'ref'), '*.dll'))
    $references.Add([psobject].Assembly.Location)
    $references.Add([System.IO.Path]::Combine($PSHOME, 'Microsoft.PowerShell.Commands.Utility.dll'))
    $references.Add([System.IO.Path]::Combine($PSHOME, 'Newtonsoft.Json.dll'))
    return $references.ToArray()
}

# The C# compiler of the newest .NET SDK beside the `dotnet` on PATH, as [dotnet, csc.dll], or
# $null. Unlike the copy of Roslyn in PowerShell's package (IL only, so every method is compiled
# just in time), the SDK's is precompiled: about 0.8 s of CPU for the host against 2.4 s. Not used
# from a place other users can write.
function Find-SdkCompiler {
    $command = Get-Command -Name dotnet -CommandType Application -TotalCount 1 -ErrorAction Ignore
    if (-not $command) { return $null }
    $dotnet = $command.Source
    $target = [System.IO.File]::ResolveLinkTarget($dotnet, $true)
    if ($target) { $dotnet = $target.FullName }
    $sdk = [System.IO.Path]::Combine([System.IO.Path]::GetDirectoryName($dotnet), 'sdk')
    if (-not [System.IO.Directory]::Exists($sdk)) { return $null }
    $best = $null
    foreach ($dir in [System.IO.Directory]::GetDirectories($sdk)) {
        $version = $null
        if (-not [version]::TryParse(([System.IO.Path]::GetFileName($dir) -replace '-.*$'), [ref]$version)) { continue }
        $csc = [System.IO.Path]::Combine($dir, 'Roslyn', 'bincore', 'csc.dll')
        if ([System.IO.File]::Exists($csc) -and (-not $best -or $version -gt $best.Version)) { $best = @{ Version = $version; Csc = $csc } }
    }
    if (-not $best) { return $null }
    foreach ($path in @($dotnet, $best.Csc, [System.IO.Path]::GetDirectoryName($best.Csc))) {
        if (Test-WritableByOthers $path) { return $null }
    }
    return @($dotnet, $best.Csc)
}

# Compiles the sources to $Path with the SDK's compiler; false when there is none or it failed (its
# words on stderr), and the caller compiles with Add-Type instead.
function Invoke-SdkCompiler([string[]]$Sources, [string]$Path) {
    $compiler = Find-SdkCompiler
    if (-not $compiler) { return $false }
    $lines = [System.Collections.Generic.List[string]]::new()
    foreach ($line in @('-nologo', '-noconfig', '-nostdlib', '-deterministic', '-target:library', '-optimize+', "-out:`"$Path`"")) { $lines.Add($line) }
    foreach ($reference in Get-HostReferences) { $lines.Add("-r:`"$reference`"") }
    foreach ($source in $Sources) { $lines.Add("`"$source`"") }
    $response = "$Path.rsp"
    [System.IO.File]::WriteAllLines($response, $lines)
    $start = [System.Diagnostics.ProcessStartInfo]::new($compiler[0])
    $start.ArgumentList.Add($compiler[1])
    $start.ArgumentList.Add("@$response")
    $start.UseShellExecute = $false
    $start.RedirectStandardOutput = $true
    $start.RedirectStandardError = $true
    # The compile runs before the host has taken its token out of the environment.
    $null = $start.Environment.Remove('SVC_WORKER_TOKEN')
    $compile = [System.Diagnostics.Process]::Start($start)
    $errors = $compile.StandardError.ReadToEndAsync()
    $said = $compile.StandardOutput.ReadToEnd()
    if (-not $compile.WaitForExit(120000)) {
        try { $compile.Kill($true) } catch { $null = $_ }
        Write-Diag "the SDK's C# compiler did not finish within 120 s; compiling with Add-Type"
        return $false
    }
    if ($compile.ExitCode -eq 0 -and [System.IO.File]::Exists($Path)) { return $true }
    Write-Diag "the SDK's C# compiler failed (exit $($compile.ExitCode)), compiling with Add-Type: $(($said + $errors.Result).Trim())"
    return $false
}

# Compiles the sources to $Path, or into memory (and loads them) when $Path is empty.
function Invoke-HostCompiler([string[]]$Sources, [string]$Path) {
    if ($Path -and (Invoke-SdkCompiler $Sources $Path)) { return }
    # With -ReferencedAssemblies, Add-Type references only what it is given (and System.Runtime).
    $arguments = @{ Path = $Sources; ReferencedAssemblies = (Get-HostReferences); CompilerOptions = '-optimize+' }
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
