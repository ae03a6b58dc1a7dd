# svc worker, part of lib/host.ps1 (dot-sourced by it): the columns of a type's format views, for the
# projection of output objects (lib/host/cs/OutputProjection.cs), which asks once per type chain.

# The properties a format view shows: property columns by name, script-block columns by the
# properties they read from $_ (Process's "NPM(K)" column is [long]($_.NPM / 1024): NPM).
function Get-ViewPropertyName($View) {
    $entries = if ($View.Control -is [System.Management.Automation.TableControl]) {
        if ($View.Control.Rows.Count -gt 0) { foreach ($column in $View.Control.Rows[0].Columns) { $column.DisplayEntry } }
    } else {
        if ($View.Control.Entries.Count -gt 0) { foreach ($item in $View.Control.Entries[0].Items) { $item.DisplayEntry } }
    }
    $names = [System.Collections.Generic.List[string]]::new()
    foreach ($entry in $entries) {
        if ($null -eq $entry) { continue }
        if ($entry.ValueType -eq [System.Management.Automation.DisplayEntryValueType]::Property) {
            if (-not $names.Contains($entry.Value)) { $names.Add($entry.Value) }
            continue
        }
        $tokens = $null
        $parseErrors = $null
        $ast = [System.Management.Automation.Language.Parser]::ParseInput($entry.Value, [ref]$tokens, [ref]$parseErrors)
        $reads = $ast.FindAll({
                param($node)
                $node -is [System.Management.Automation.Language.MemberExpressionAst] -and
                $node.Member -is [System.Management.Automation.Language.StringConstantExpressionAst] -and
                $node.Expression -is [System.Management.Automation.Language.VariableExpressionAst] -and
                @('_', 'PSItem') -contains $node.Expression.VariablePath.UserPath
            }, $true)
        foreach ($read in $reads) {
            if (-not $names.Contains($read.Member.Value)) { $names.Add($read.Member.Value) }
        }
    }
    return , $names.ToArray()
}

# The columns of the first table or list view, in type-chain order, that names any.
function Select-FirstViewPropertyName([string[]]$TypeNames, $Definitions) {
    foreach ($typeName in $TypeNames) {
        foreach ($definition in $Definitions) {
            if ($definition.TypeNames -notcontains $typeName) { continue }
            foreach ($view in $definition.FormatViewDefinition) {
                if ($view.Control -isnot [System.Management.Automation.TableControl] -and $view.Control -isnot [System.Management.Automation.ListControl]) { continue }
                $names = Get-ViewPropertyName $view
                if ($names.Count -gt 0) { return , $names }
            }
        }
    }
    return , [string[]]@()
}

# The columns of the first table or list view of the first type in the chain that has one, read
# in the worker runspace, where the format data of imported modules lives.
function Get-FormatViewPropertyName([string[]]$TypeNames) {
    $names = [string[]]@()
    $lookup = @(foreach ($name in $TypeNames) { if ($name -ne 'System.Object') { [System.Management.Automation.WildcardPattern]::Escape($name) } })
    if ($lookup.Count -gt 0) {
        $ps = [powershell]::Create($script:Worker)
        try {
            $null = $ps.AddCommand('Microsoft.PowerShell.Utility\Get-FormatData').AddParameter('TypeName', [string[]]$lookup)
            $names = Select-FirstViewPropertyName $TypeNames $ps.Invoke()
        } catch {
            Write-Diag "reading the format data of $($TypeNames[0]) failed: $((Get-InnerException $_.Exception).Message)"
        } finally {
            $ps.Dispose()
        }
    }
    return , $names
}
