import { AppError, defineMessages } from '@app/platform';

/** The credentials service's errors: stable codes, statuses and localized messages. */
export const credentialNotFound = (id: string) => new AppError('CREDENTIALS_NOT_FOUND', 404, 'credentials.notFound', { id });
export const identityMissing = (id: string) => new AppError('CREDENTIALS_IDENTITY_NOT_FOUND', 422, 'credentials.identityNotFound', { id });
export const localExists = () => new AppError('CREDENTIALS_LOCAL_EXISTS', 422, 'credentials.localExists');
export const subjectTaken = (provider: string) => new AppError('CREDENTIALS_SUBJECT_TAKEN', 422, 'credentials.subjectTaken', { provider });
export const credentialConflict = () => new AppError('CREDENTIALS_CONFLICT', 422, 'credentials.conflict');
export const identityUnavailable = () => new AppError('CREDENTIALS_IDENTITY_UNAVAILABLE', 503, 'credentials.identityUnavailable', {}, { 'retry-after': '1' });

/**
 * The provider rules, worded per locale. Each names the rule it enforces, so a 400 tells
 * the caller exactly what to change.
 */
defineMessages({
  en: {
    'credentials.notFound': 'No credential has id {id}.',
    'credentials.identityNotFound': 'No identity has id {id}; create the identity first.',
    'credentials.localExists': 'This identity already has a LOCAL credential; update it instead.',
    'credentials.subjectTaken': 'This {provider} subject is already linked to a credential.',
    'credentials.conflict': 'The credential conflicts with an existing one.',
    'credentials.identityUnavailable': 'The identity service could not be asked; retry shortly.',
    'credentials.rule.type': 'Rule "type follows provider": a {provider} credential has type {type}.',
    'credentials.rule.secretRequired': 'Rule "{provider} needs secret": a {provider} credential must have a secret.',
    'credentials.rule.secretForbidden': 'Rule "{provider} forbids secret": a {provider} credential has no secret; send subject only.',
    'credentials.rule.subjectRequired': 'Rule "{provider} needs subject": send the account id the provider gives as subject.',
    'credentials.rule.subjectForbidden': 'Rule "{provider} forbids subject": a {provider} credential has no subject.',
    'credentials.rule.passwordLength': 'Rule "LOCAL password length": a password has {min} to {max} characters.',
    'credentials.rule.apiKeyStrength':
      'Rule "API_KEY secret strength": a supplied secret is {min} to {max} URL-safe characters (A-Z a-z 0-9 _ -) of random data; omit secret to have one generated.',
  },
  'pt-BR': {
    'credentials.notFound': 'Nenhuma credencial tem o id {id}.',
    'credentials.identityNotFound': 'Nenhuma identidade tem o id {id}; crie a identidade primeiro.',
    'credentials.localExists': 'Esta identidade já tem uma credencial LOCAL; atualize-a.',
    'credentials.subjectTaken': 'Este subject de {provider} já está vinculado a uma credencial.',
    'credentials.conflict': 'A credencial conflita com uma existente.',
    'credentials.identityUnavailable': 'Não foi possível consultar o serviço de identidades; tente novamente em instantes.',
    'credentials.rule.type': 'Regra "o tipo segue o provedor": uma credencial {provider} tem o tipo {type}.',
    'credentials.rule.secretRequired': 'Regra "{provider} exige secret": uma credencial {provider} precisa de um secret.',
    'credentials.rule.secretForbidden': 'Regra "{provider} proíbe secret": uma credencial {provider} não tem secret; envie apenas subject.',
    'credentials.rule.subjectRequired': 'Regra "{provider} exige subject": envie como subject o id de conta dado pelo provedor.',
    'credentials.rule.subjectForbidden': 'Regra "{provider} proíbe subject": uma credencial {provider} não tem subject.',
    'credentials.rule.passwordLength': 'Regra "tamanho da senha LOCAL": uma senha tem de {min} a {max} caracteres.',
    'credentials.rule.apiKeyStrength':
      'Regra "força do secret de API_KEY": um secret enviado tem de {min} a {max} caracteres seguros para URL (A-Z a-z 0-9 _ -) aleatórios; omita secret para gerar um.',
  },
  es: {
    'credentials.notFound': 'Ninguna credencial tiene el id {id}.',
    'credentials.identityNotFound': 'Ninguna identidad tiene el id {id}; cree la identidad primero.',
    'credentials.localExists': 'Esta identidad ya tiene una credencial LOCAL; actualícela.',
    'credentials.subjectTaken': 'Este subject de {provider} ya está vinculado a una credencial.',
    'credentials.conflict': 'La credencial entra en conflicto con una existente.',
    'credentials.identityUnavailable': 'No se pudo consultar el servicio de identidades; reintente en breve.',
    'credentials.rule.type': 'Regla "el tipo sigue al proveedor": una credencial {provider} tiene el tipo {type}.',
    'credentials.rule.secretRequired': 'Regla "{provider} requiere secret": una credencial {provider} debe tener un secret.',
    'credentials.rule.secretForbidden': 'Regla "{provider} prohíbe secret": una credencial {provider} no tiene secret; envíe solo subject.',
    'credentials.rule.subjectRequired': 'Regla "{provider} requiere subject": envíe como subject el id de cuenta que da el proveedor.',
    'credentials.rule.subjectForbidden': 'Regla "{provider} prohíbe subject": una credencial {provider} no tiene subject.',
    'credentials.rule.passwordLength': 'Regla "longitud de contraseña LOCAL": una contraseña tiene de {min} a {max} caracteres.',
    'credentials.rule.apiKeyStrength':
      'Regla "fuerza del secret de API_KEY": un secret enviado tiene de {min} a {max} caracteres seguros para URL (A-Z a-z 0-9 _ -) aleatorios; omita secret para generar uno.',
  },
  fr: {
    'credentials.notFound': "Aucun identifiant de connexion n'a l'id {id}.",
    'credentials.identityNotFound': "Aucune identité n'a l'id {id} ; créez d'abord l'identité.",
    'credentials.localExists': 'Cette identité a déjà un identifiant LOCAL ; modifiez-le plutôt.',
    'credentials.subjectTaken': 'Ce subject {provider} est déjà lié à un identifiant.',
    'credentials.conflict': "L'identifiant entre en conflit avec un identifiant existant.",
    'credentials.identityUnavailable': "Le service des identités n'a pas pu être interrogé ; réessayez bientôt.",
    'credentials.rule.type': 'Règle « le type suit le fournisseur » : un identifiant {provider} a le type {type}.',
    'credentials.rule.secretRequired': 'Règle « {provider} exige secret » : un identifiant {provider} doit avoir un secret.',
    'credentials.rule.secretForbidden': "Règle « {provider} interdit secret » : un identifiant {provider} n'a pas de secret ; envoyez seulement subject.",
    'credentials.rule.subjectRequired': "Règle « {provider} exige subject » : envoyez comme subject l'id de compte donné par le fournisseur.",
    'credentials.rule.subjectForbidden': "Règle « {provider} interdit subject » : un identifiant {provider} n'a pas de subject.",
    'credentials.rule.passwordLength': 'Règle « longueur du mot de passe LOCAL » : un mot de passe a de {min} à {max} caractères.',
    'credentials.rule.apiKeyStrength':
      'Règle « robustesse du secret API_KEY » : un secret fourni compte de {min} à {max} caractères sûrs pour les URL (A-Z a-z 0-9 _ -) aléatoires ; omettez secret pour en générer un.',
  },
  de: {
    'credentials.notFound': 'Kein Zugangsnachweis hat die ID {id}.',
    'credentials.identityNotFound': 'Keine Identität hat die ID {id}; legen Sie zuerst die Identität an.',
    'credentials.localExists': 'Diese Identität hat bereits einen LOCAL-Zugangsnachweis; ändern Sie diesen.',
    'credentials.subjectTaken': 'Dieses {provider}-Subject ist bereits mit einem Zugangsnachweis verknüpft.',
    'credentials.conflict': 'Der Zugangsnachweis steht im Konflikt mit einem bestehenden.',
    'credentials.identityUnavailable': 'Der Identitätsdienst war nicht erreichbar; versuchen Sie es gleich erneut.',
    'credentials.rule.type': 'Regel „Typ folgt Anbieter“: ein {provider}-Zugangsnachweis hat den Typ {type}.',
    'credentials.rule.secretRequired': 'Regel „{provider} braucht secret“: ein {provider}-Zugangsnachweis muss ein secret haben.',
    'credentials.rule.secretForbidden': 'Regel „{provider} verbietet secret“: ein {provider}-Zugangsnachweis hat kein secret; senden Sie nur subject.',
    'credentials.rule.subjectRequired': 'Regel „{provider} braucht subject“: senden Sie die Konto-ID des Anbieters als subject.',
    'credentials.rule.subjectForbidden': 'Regel „{provider} verbietet subject“: ein {provider}-Zugangsnachweis hat kein subject.',
    'credentials.rule.passwordLength': 'Regel „Länge des LOCAL-Passworts“: ein Passwort hat {min} bis {max} Zeichen.',
    'credentials.rule.apiKeyStrength':
      'Regel „Stärke des API_KEY-secret“: ein mitgesendetes secret hat {min} bis {max} URL-sichere Zufallszeichen (A-Z a-z 0-9 _ -); lassen Sie secret weg, um eines erzeugen zu lassen.',
  },
});
