# svc worker, part of lib/host.ps1 (dot-sourced by it): diagnostics, error records and the frames of docs/worker-protocol.md.

function Write-Diag([string]$Message) {
    [Console]::Error.WriteLine("host.ps1: $Message")
}

# Exactly one layer: a .NET call made from script wraps what it throws in MethodInvocationException.
function Get-InnerException([System.Exception]$Exception) {
    if ($Exception -is [System.Management.Automation.MethodInvocationException] -and $null -ne $Exception.InnerException) {
        return $Exception.InnerException
    }
    return $Exception
}

function Get-ErrorRecord([System.Exception]$Exception) {
    if ($Exception -is [System.Management.Automation.IContainsErrorRecord]) {
        $record = $null
        try { $record = $Exception.ErrorRecord } catch { $record = $null }
        if ($null -ne $record) { return $record }
    }
    return [System.Management.Automation.ErrorRecord]::new($Exception, $Exception.GetType().Name,
        [System.Management.Automation.ErrorCategory]::NotSpecified, $null)
}

function Get-NonEmpty([string]$Text) {
    if ([string]::IsNullOrEmpty($Text)) { return $null }
    return $Text
}

# The runspace has no host UI, so a prompt fails at once with a HostException. Its text names the
# prompt only for confirmations: Read-Host's prompt is not in it at all. The statement that prompted
# is, so the message quotes it, says why it failed, and what to do instead.
function Get-ErrorMessage([System.Management.Automation.ErrorRecord]$Record) {
    $message = $Record.ToString()
    $exception = $Record.Exception
    while ($null -ne $exception -and $exception -isnot [System.Management.Automation.Host.HostException]) {
        $exception = $exception.InnerException
    }
    if ($null -eq $exception) { return $message }
    $invocation = $Record.InvocationInfo
    $command = if ($null -ne $invocation -and $null -ne $invocation.MyCommand) { $invocation.MyCommand.Name } else { '' }
    if (-not $command) { $command = 'The command' }
    $statement = if ($null -ne $invocation) { ([string]$invocation.Line).Trim() } else { '' }
    $asked = if ($statement) { " (at: $statement)" } else { '' }
    return "$command asked for user input$asked, but svc runs commands non-interactively: give the value as a parameter, or -Confirm:`$false for a confirmation. $message"
}

function ConvertTo-ErrorInfo([System.Management.Automation.ErrorRecord]$Record, [bool]$Terminating) {
    $invocation = $Record.InvocationInfo
    $position = $null
    if ($null -ne $invocation -and $invocation.ScriptLineNumber -gt 0) {
        $position = [ordered]@{
            scriptName = Get-NonEmpty $invocation.ScriptName
            line       = $invocation.ScriptLineNumber
            column     = $invocation.OffsetInLine
            text       = Get-NonEmpty $invocation.Line
        }
    }
    $category = $Record.CategoryInfo
    [ordered]@{
        message               = Get-ErrorMessage $Record
        fullyQualifiedErrorId = Get-NonEmpty $Record.FullyQualifiedErrorId
        category              = [string]$category.Category
        targetName            = Get-NonEmpty $category.TargetName
        targetType            = Get-NonEmpty $category.TargetType
        exceptionType         = if ($null -ne $Record.Exception) { $Record.Exception.GetType().FullName } else { $null }
        scriptStackTrace      = Get-NonEmpty $Record.ScriptStackTrace
        terminating           = $Terminating
        position              = $position
    }
}

# JSON null or absent -> empty array; a scalar -> one item. The comma stops the caller unrolling it.
function ConvertTo-List($Value) {
    if ($null -eq $Value) { return , ([object[]]@()) }
    return , ([object[]]@($Value))
}

# Requests are parsed with System.Text.Json rather than ConvertFrom-Json: in 7.4 ConvertFrom-Json turns
# every ISO-8601-looking string into a DateTime and cannot be told not to, which would change the
# arguments a user passes. Objects become case-insensitive [hashtable]s, arrays object[].
function ConvertFrom-JsonElement($Element) {
    switch ([string]$Element.ValueKind) {
        'Object' {
            $table = @{}
            foreach ($property in $Element.EnumerateObject()) { $table[$property.Name] = ConvertFrom-JsonElement $property.Value }
            return $table
        }
        'Array' {
            $items = [System.Collections.Generic.List[object]]::new()
            foreach ($item in $Element.EnumerateArray()) { $items.Add((ConvertFrom-JsonElement $item)) }
            return , $items.ToArray()
        }
        'String' { return $Element.GetString() }
        'Number' {
            [long]$number = 0
            if ($Element.TryGetInt64([ref]$number)) {
                if ($number -ge [int]::MinValue -and $number -le [int]::MaxValue) { return [int]$number }
                return $number
            }
            return $Element.GetDouble()
        }
        'True' { return $true }
        'False' { return $false }
    }
    return $null
}

# PowerShell 7.5 and later can keep such strings as they are (-DateKind String), and the cmdlet is
# several times faster than the walk above (0.14 against 0.42-0.66 ms for an invoke frame on pwsh
# 7.6.5). Its tables are case-sensitive, which is fine for the frame (svc spells every key); the
# values of command parameters are made case-insensitive where they are used (Start-Invoke). The
# host runspace runs no user code, so the command needs no module qualification here.
# -DateKind does not exist in 7.4, hence the splatted table (null there) rather than a literal parameter.
$script:FrameJsonParameters = if ($PSVersionTable.PSVersion -ge [version]'7.5') { @{ AsHashtable = $true; DateKind = 'String'; NoEnumerate = $true } } else { $null }

function ConvertFrom-FrameJson([string]$Line) {
    $parameters = $script:FrameJsonParameters
    if ($null -ne $parameters) { return ConvertFrom-Json -InputObject $Line @parameters }
    $document = [System.Text.Json.JsonDocument]::Parse($Line)
    try { return ConvertFrom-JsonElement $document.RootElement } finally { $document.Dispose() }
}

# Tables become case-insensitive [hashtable]s and arrays object[], as ConvertFrom-JsonElement makes
# them and as PowerShell's own tables are. Only containers are recursed into.
function ConvertTo-PlainJsonValue($Value) {
    if ($Value -is [System.Collections.IDictionary]) {
        $table = [hashtable]::new($Value.Count, [System.StringComparer]::OrdinalIgnoreCase)
        foreach ($entry in $Value.GetEnumerator()) {
            $item = $entry.Value
            if ($item -is [System.Collections.IDictionary] -or $item -is [object[]]) { $item = ConvertTo-PlainJsonValue $item }
            $table[$entry.Key] = $item
        }
        return $table
    }
    $items = [object[]]::new($Value.Count)
    for ($i = 0; $i -lt $items.Length; $i++) {
        $item = $Value[$i]
        if ($item -is [System.Collections.IDictionary] -or $item -is [object[]]) { $item = ConvertTo-PlainJsonValue $item }
        $items[$i] = $item
    }
    return , $items
}

function Send-Frame([string]$Json) {
    $script:Writer.WriteLine($Json)
}

function Send-Response($Id, $Result) {
    Send-Frame (ConvertTo-Json -InputObject ([ordered]@{ id = $Id; ok = $true; result = $Result }) -Depth 100 -Compress)
}

function Send-Failure($Id, [string]$Kind, [string]$Message, $Record) {
    $failure = [ordered]@{ kind = $Kind; message = $Message; record = $Record }
    Send-Frame (ConvertTo-Json -InputObject ([ordered]@{ id = $Id; ok = $false; error = $failure }) -Depth 100 -Compress)
}

function Connect-Endpoint([string]$Spec) {
    if ($Spec.StartsWith('unix:', [System.StringComparison]::Ordinal)) {
        $socket = [System.Net.Sockets.Socket]::new([System.Net.Sockets.AddressFamily]::Unix,
            [System.Net.Sockets.SocketType]::Stream, [System.Net.Sockets.ProtocolType]::Unspecified)
        $socket.Connect([System.Net.Sockets.UnixDomainSocketEndPoint]::new($Spec.Substring(5)))
    } elseif ($Spec -match '^tcp:(.+):(\d{1,5})$') {
        $address = [System.Net.IPAddress]::Parse(($Matches[1] -replace '^\[|\]$', ''))
        $socket = [System.Net.Sockets.Socket]::new($address.AddressFamily,
            [System.Net.Sockets.SocketType]::Stream, [System.Net.Sockets.ProtocolType]::Tcp)
        $socket.NoDelay = $true
        $socket.Connect($address, [int]$Matches[2])
    } else {
        throw "Unsupported endpoint '$Spec'."
    }
    return [System.Net.Sockets.NetworkStream]::new($socket, $true)
}
